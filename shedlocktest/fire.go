package shedlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// RunCatchUp runs the contract of shedlock.FireLocker, what CatchUp needs of
// a store, against the store newStore makes: every provider it returns must
// implement FireLocker. A new store (etcd, for one) passes it before its
// CatchUp jobs can be trusted.
//
// The heart of it is that a fire time succeeds at most once across providers:
// the take is conditional on the recorded fire time, in the store, never on
// timing. Several providers race for each fire time, each releasing at once
// as succeeded; exactly one wins each.
func RunCatchUp(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, newProvider NewProviderFunc)
	}{
		{"RecordsAndRefusesDoneFireTime", testFireRecord},
		{"FailedRunFreesAtOnce", testFireFailed},
		{"SuccessHolds", testFireHold},
		{"OnceAcrossProviders", testFireOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func fireLocker(t *testing.T, newProvider NewProviderFunc) shedlock.FireLocker {
	t.Helper()
	p := newProvider(t)
	fl, ok := p.(shedlock.FireLocker)
	if !ok {
		t.Fatalf("provider %T does not implement shedlock.FireLocker", p)
	}
	return fl
}

func fireConfig(name string) shedlock.LockConfig {
	return shedlock.LockConfig{Name: name, LockAtMostFor: 30 * time.Second}
}

// fireBase is a fire time on a whole second, as cron's are.
func fireBase() time.Time { return time.Now().Truncate(time.Second).Add(-time.Hour) }

func testFireRecord(t *testing.T, newProvider NewProviderFunc) {
	ctx := context.Background()
	p := fireLocker(t, newProvider)
	cfg := fireConfig("fire-record")
	f1 := fireBase()
	if _, ok, err := p.LastFire(ctx, cfg.Name); err != nil || ok {
		t.Fatalf("LastFire of a name never run: ok %v, err %v; want none", ok, err)
	}
	l, err := p.TryLockFire(ctx, cfg, f1)
	if err != nil {
		t.Fatalf("TryLockFire(f1): %v", err)
	}
	if err := l.UnlockSucceeded(ctx, 0); err != nil {
		t.Fatalf("UnlockSucceeded: %v", err)
	}
	last, ok, err := p.LastFire(ctx, cfg.Name)
	if err != nil || !ok || !last.Equal(f1) {
		t.Fatalf("LastFire = %v, %v, %v; want %v", last, ok, err, f1)
	}
	for _, f := range []time.Time{f1, f1.Add(-time.Second)} {
		if l, err := p.TryLockFire(ctx, cfg, f); !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Fatalf("TryLockFire(%v) after %v succeeded: lock %v, err %v; want ErrNotAcquired", f, f1, l, err)
		}
	}
	f2 := f1.Add(10 * time.Second)
	l, err = p.TryLockFire(ctx, cfg, f2)
	if err != nil {
		t.Fatalf("TryLockFire(f2), newer than the recorded f1: %v", err)
	}
	if err := l.UnlockSucceeded(ctx, 0); err != nil {
		t.Fatalf("UnlockSucceeded(f2): %v", err)
	}
	if last, _, _ := p.LastFire(ctx, cfg.Name); !last.Equal(f2) {
		t.Fatalf("LastFire = %v; want %v", last, f2)
	}
}

func testFireFailed(t *testing.T, newProvider NewProviderFunc) {
	ctx := context.Background()
	p1, p2 := fireLocker(t, newProvider), fireLocker(t, newProvider)
	cfg := fireConfig("fire-failed")
	f := fireBase()
	l, err := p1.TryLockFire(ctx, cfg, f)
	if err != nil {
		t.Fatalf("TryLockFire: %v", err)
	}
	if l2, err := p2.TryLockFire(ctx, cfg, f); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("second TryLockFire while held: lock %v, err %v; want ErrNotAcquired", l2, err)
	}
	if err := l.Unlock(ctx); err != nil { // the run failed: nothing recorded, the lock free at once
		t.Fatalf("Unlock: %v", err)
	}
	if _, ok, err := p2.LastFire(ctx, cfg.Name); err != nil || ok {
		t.Fatalf("LastFire after a failed run: ok %v, err %v; want none", ok, err)
	}
	l, err = p2.TryLockFire(ctx, cfg, f)
	if err != nil {
		t.Fatalf("TryLockFire of a fire time whose run failed: %v", err)
	}
	if err := l.UnlockSucceeded(ctx, 0); err != nil {
		t.Fatalf("UnlockSucceeded: %v", err)
	}
}

func testFireHold(t *testing.T, newProvider NewProviderFunc) {
	ctx := context.Background()
	p := fireLocker(t, newProvider)
	cfg := fireConfig("fire-hold")
	f := fireBase()
	l, err := p.TryLockFire(ctx, cfg, f)
	if err != nil {
		t.Fatalf("TryLockFire: %v", err)
	}
	if err := l.UnlockSucceeded(ctx, time.Minute); err != nil {
		t.Fatalf("UnlockSucceeded: %v", err)
	}
	if l, err := p.TryLockFire(ctx, cfg, f.Add(time.Second)); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLockFire of a newer fire time within the hold: lock %v, err %v; want ErrNotAcquired", l, err)
	}
}

// testFireOnce races providers for each of several fire times, each winner
// releasing at once as succeeded: a fire time taken again after its success
// shows as a second win.
func testFireOnce(t *testing.T, newProvider NewProviderFunc) {
	const providers, fires, tries = 4, 5, 6
	ps := make([]shedlock.FireLocker, providers)
	for i := range ps {
		ps[i] = fireLocker(t, newProvider)
	}
	cfg := fireConfig("fire-once")
	base := fireBase()
	var errs []error
	for i := range fires {
		f := base.Add(time.Duration(i) * 10 * time.Second)
		var wins atomic.Int32
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range tries {
					l, err := p.TryLockFire(context.Background(), cfg, f)
					if errors.Is(err, shedlock.ErrNotAcquired) {
						continue
					}
					if err == nil {
						wins.Add(1)
						err = l.UnlockSucceeded(context.Background(), 0)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Errorf("fire time %d succeeded %d times across %d providers; want exactly 1", i, n, providers)
		}
	}
	if len(errs) > 0 {
		t.Fatalf("store errors: %v", fmt.Sprint(errs))
	}
}
