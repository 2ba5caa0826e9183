package shedlocktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// testBatch checks the BatchLocker contract where the provider has it: a
// batch takes the free locks and refuses the held ones, entry by entry and in
// the order of its configs; a bad config is its entry's error and a name twice
// the batch's; its locks release, honouring LockAtLeastFor, and extend as
// TryLock's do; each has a fencing token larger than its name's last.
func testBatch(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	ba, ok := a.(shedlock.BatchLocker)
	if !ok { // the contract is the provider's to take on: nothing to check
		t.Logf("%T is not a shedlock.BatchLocker", a)
		return
	}
	res := testBatchEntries(t, ba, b)
	testBatchLocks(t, b, res)
	many := make([]shedlock.LockConfig, 50)
	for i := range many {
		many[i] = cfg(fmt.Sprintf("many-%02d", i), time.Minute, 0)
	}
	for i, r := range mustBatch(t, ba, many...) {
		if r.Err != nil {
			t.Fatalf("batch of %d new names, entry %d: %v", len(many), i, r.Err)
		}
	}
	if bb, ok := b.(shedlock.BatchLocker); ok {
		for i, r := range mustBatch(t, bb, many...) {
			if !errors.Is(r.Err, shedlock.ErrNotAcquired) {
				t.Fatalf("batch of %d held names, entry %d: want ErrNotAcquired, got %v", len(many), i, r.Err)
			}
		}
	}
}

// mustBatch makes one batch attempt, which must answer each config.
func mustBatch(t *testing.T, p shedlock.BatchLocker, cfgs ...shedlock.LockConfig) []shedlock.LockResult {
	t.Helper()
	res, err := p.TryLockBatch(context.Background(), cfgs)
	if err != nil {
		t.Fatalf("TryLockBatch: %v", err)
	}
	if len(res) != len(cfgs) {
		t.Fatalf("TryLockBatch: %d results for %d configs", len(res), len(cfgs))
	}
	return res
}

// testBatchEntries has ba take a batch of a free name, a name b holds, a
// name b held before (b-1, with LockAtLeastFor) and a bad config: each
// entry's answer, and b-1's fencing token, must be TryLock's. The batch's
// locks b-2 and b-1 are returned held.
func testBatchEntries(t *testing.T, ba shedlock.BatchLocker, b shedlock.LockProvider) []shedlock.LockResult {
	ctx := context.Background()
	first := mustLock(t, b, cfg("b-1", time.Minute, 0))
	lastFence, fenced := shedlock.FenceOf(first)
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	mustLock(t, b, cfg("held", time.Minute, 0))
	res := mustBatch(t, ba, cfg("b-2", time.Minute, 0), cfg("held", time.Minute, 0), cfg("b-1", time.Minute, time.Minute),
		cfg("bad", 0, 0))
	for i, want := range []error{nil, shedlock.ErrNotAcquired, nil, shedlock.ErrInvalidConfig} {
		r := res[i]
		switch {
		case want == nil && (r.Err != nil || r.Lock == nil):
			t.Fatalf("entry %d (%s): want the lock, got lock=%v err=%v", i, []string{"b-2", "held", "b-1", "bad"}[i], r.Lock != nil, r.Err)
		case want != nil && (!errors.Is(r.Err, want) || r.Lock != nil):
			t.Fatalf("entry %d: want %v, got lock=%v err=%v", i, want, r.Lock != nil, r.Err)
		}
	}
	if f, ok := shedlock.FenceOf(res[2].Lock); ok != fenced || (ok && f <= lastFence) {
		t.Fatalf("fencing token of a batch lock: %d, %v; want one larger than the name's last, %d, where the store has them (%v)",
			f, ok, lastFence, fenced)
	}
	mustNotLock(t, b, cfg("b-2", time.Minute, 0))
	mustNotLock(t, b, cfg("b-1", time.Minute, 0))
	if _, err := ba.TryLockBatch(ctx, []shedlock.LockConfig{cfg("dup", time.Minute, 0), cfg("dup", time.Minute, 0)}); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Fatalf("a name twice in one batch: want ErrInvalidConfig, got %v", err)
	}
	return res
}

// testBatchLocks checks that the batch's locks in res (b-2 and b-1) extend,
// keeping their tokens, and release as TryLock's do, b-1 honouring its
// LockAtLeastFor.
func testBatchLocks(t *testing.T, b shedlock.LockProvider, res []shedlock.LockResult) {
	ctx := context.Background()
	f0, _ := shedlock.FenceOf(res[0].Lock) // tokens order one name's acquisitions: two names may share one
	if err := res[0].Lock.Extend(ctx, 2*time.Minute, 0); err != nil {
		t.Fatalf("Extend of a batch lock: %v", err)
	}
	if f, _ := shedlock.FenceOf(res[0].Lock); f != f0 {
		t.Fatalf("Extend changed a batch lock's token from %d to %d", f0, f)
	}
	for i, l := range []shedlock.Lock{res[0].Lock, res[2].Lock} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of batch lock %d: %v", i, err)
		}
	}
	mustLock(t, b, cfg("b-2", time.Minute, 0))
	mustNotLock(t, b, cfg("b-1", time.Minute, 0)) // its LockAtLeastFor holds it
	if err := res[0].Lock.Extend(ctx, time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Extend of a released batch lock: want ErrLockLost, got %v", err)
	}
}
