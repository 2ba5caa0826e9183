package shedlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// stuckFireProvider's fire-time attempts hang, as on rows another
// transaction holds, until their context ends; its other statements answer
// at once.
type stuckFireProvider struct {
	scriptedProvider
	stuck atomic.Int32 // fire-time attempts hanging
}

func (p *stuckFireProvider) TryLockFire(ctx context.Context, _ LockConfig, _ time.Time) (FireLock, error) {
	p.stuck.Add(1)
	defer p.stuck.Add(-1)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *stuckFireProvider) LastFire(context.Context, string) (time.Time, bool, error) {
	return time.Time{}, false, nil
}

// CatchUp's attempts for their fire times are attempts: however many hang on
// rows another transaction holds, the place kept for releases and
// extensions stays free, so a healthy job's lock is extended and released at
// once rather than lost while they hang.
func TestFireAttemptsLeaveReleasesTheirPlace(t *testing.T) {
	t.Parallel()
	p := &stuckFireProvider{scriptedProvider: scriptedProvider{answers: map[string]error{}}}
	ex := NewExecutor(p, WithMaxInFlight(2), WithAcquireTimeout(time.Minute))
	as := ex.attempts
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	for _, name := range []string{"stuck-1", "stuck-2"} {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = as.tryFire(ctx, LockConfig{Name: name, LockAtMostFor: time.Minute}, time.Now())
		}()
	}
	// Both are under way: one hangs in the store, the other hangs there too
	// or waits for an attempt's place.
	deadline := time.Now().Add(30 * time.Second)
	for !(p.stuck.Load() == 2 || p.stuck.Load() == 1 && fireWaiting(as) == 1) {
		if time.Now().After(deadline) {
			t.Fatalf("the fire-time attempts never got under way: %d in the store", p.stuck.Load())
		}
		time.Sleep(time.Millisecond)
	}

	held := nopLock{}
	ext, cancelExt := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelExt()
	if err := as.extend(ext, held, time.Minute, 0); err != nil {
		t.Fatalf("extend while two fire-time attempts hang: %v", err)
	}
	if err := as.unlock(ext, held); err != nil {
		t.Fatalf("unlock while two fire-time attempts hang: %v", err)
	}
	cancel()
	<-done
	<-done
}

// fireWaiting reports how many attempts of any kind wait for a place.
func fireWaiting(as *attempts) int {
	a, w := as.inFlight().Waiting()
	return a + w
}
