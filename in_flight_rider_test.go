package shedlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// hangingBatchProvider's batches hang until released, then take every lock;
// it records the names whose locks were released.
type hangingBatchProvider struct {
	scriptedProvider
	inBatch, releaseBatch chan struct{}
	unlockedMu            sync.Mutex
	unlocked              map[string]int
}

func (p *hangingBatchProvider) TryLockBatch(_ context.Context, cfgs []LockConfig) ([]LockResult, error) {
	close(p.inBatch)
	<-p.releaseBatch
	res := make([]LockResult, len(cfgs))
	for i, c := range cfgs {
		res[i].Lock = &recordedLock{name: c.Name, p: p}
	}
	return res, nil
}

func (p *hangingBatchProvider) released(name string) int {
	p.unlockedMu.Lock()
	defer p.unlockedMu.Unlock()
	return p.unlocked[name]
}

type recordedLock struct {
	name string
	p    *hangingBatchProvider
}

func (l *recordedLock) Unlock(context.Context) error {
	l.p.unlockedMu.Lock()
	defer l.p.unlockedMu.Unlock()
	l.p.unlocked[l.name]++
	return nil
}

func (*recordedLock) Extend(context.Context, time.Duration, time.Duration) error { return nil }

// A caller whose own context ends while its attempt rides a batch (as leader
// or rider) returns then, with its context's error, not when the batch ends;
// the lock the batch takes for it afterwards is released, not left held; the
// batch's other attempts are not disturbed.
func TestAttemptLeavesItsBatchWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	p := &hangingBatchProvider{
		scriptedProvider: scriptedProvider{answers: map[string]error{}, hold: "blocker",
			holding: make(chan struct{}), release: make(chan struct{})},
		inBatch: make(chan struct{}), releaseBatch: make(chan struct{}), unlocked: map[string]int{},
	}
	ex := NewExecutor(p, WithMaxInFlight(2)) // one attempt in flight
	blocked := make(chan struct{})
	go func() { defer close(blocked); runOnce(t, ex, "blocker") }()
	<-p.holding

	type outcome struct {
		ran bool
		err error
	}
	short, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := map[string]chan outcome{}
	for _, n := range []string{"short", "patient-1", "patient-2"} {
		ctx := context.Background()
		if n == "short" {
			ctx = short
		}
		ch := make(chan outcome, 1)
		out[n] = ch
		go func() {
			ran, err := ex.Run(ctx, LockConfig{Name: n, LockAtMostFor: time.Minute}, func(context.Context) error { return nil })
			ch <- outcome{ran, err}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !queued(ex.attempts.inFlight(), 3) {
		if time.Now().After(deadline) {
			t.Fatal("the attempts did not all queue within 10s")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	close(p.release)
	<-p.inBatch
	cancel() // the short caller's deadline, while the batch hangs
	select {
	case o := <-out["short"]:
		if o.ran || !errors.Is(o.err, context.Canceled) {
			t.Errorf("the short caller: ran %v, %v; want its context's error", o.ran, o.err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the short caller is still waiting for its batch 10s after its context ended")
	}
	close(p.releaseBatch)
	deadline = time.Now().Add(10 * time.Second)
	for _, n := range []string{"patient-1", "patient-2"} {
		if o := <-out[n]; !o.ran || o.err != nil {
			t.Errorf("%s: ran %v, %v; want it run", n, o.ran, o.err)
		}
	}
	for p.released("short") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the lock the batch took for the caller that left was never released")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	<-blocked
}
