package shedlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// countingProvider counts the statements a provider's locks make, and can be
// cut off from its store: every call then fails as a network error would.
type countingProvider struct {
	p   shedlock.LockProvider
	n   atomic.Int64
	cut atomic.Bool
}

var errCut = errors.New("store unreachable")

func (c *countingProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	c.n.Add(1)
	if c.cut.Load() {
		return nil, errCut
	}
	l, err := c.p.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &countingLock{l, c}, nil
}

type countingLock struct {
	shedlock.Lock
	c *countingProvider
}

func (l *countingLock) Unlock(ctx context.Context) error {
	l.c.n.Add(1)
	if l.c.cut.Load() {
		return errCut
	}
	return l.Lock.Unlock(ctx)
}

func (l *countingLock) Extend(ctx context.Context, most, least time.Duration) error {
	l.c.n.Add(1)
	if l.c.cut.Load() {
		return errCut
	}
	return l.Lock.Extend(ctx, most, least)
}

func (l *countingLock) Fence() (int64, bool) { return shedlock.FenceOf(l.Lock) }

// A leader makes about three statements per lease, a follower one per retry
// period, and a cron job run under the leader none.
func TestLeaderStatements(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const lease, retry = 600 * time.Millisecond, 100 * time.Millisecond
	lp := &countingProvider{p: store.Provider("leader")}
	fp := &countingProvider{p: store.Provider("follower")}
	leader := newLeader(t, lp, lease, shedlock.WithLeaderRetryPeriod(retry))
	leader.Start()
	waitLeading(t, 5*time.Second, leader)
	follower := newLeader(t, fp, lease, shedlock.WithLeaderRetryPeriod(retry))
	follower.Start()

	runs := 0
	job := leader.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		if _, ok := shedlock.FenceFromContext(ctx); !ok {
			t.Error("the job's context has no token")
		}
		runs++
		return nil
	}))
	idle := follower.OnlyWhenLeading()(shedlock.JobFunc(func(context.Context) error {
		t.Error("a follower ran a job")
		return nil
	}))
	before, start := lp.n.Load()+fp.n.Load(), time.Now()
	for range 1000 {
		job.Run()
		idle.Run()
	}
	// Renewals and retries may come while the loop runs (on a busy machine
	// it can take longer than a retry period): those are the leaders'
	// statements, not the jobs'. Allow what they send in that time (a
	// renewal a third of a lease, a retry a period, one of each in flight);
	// a statement per job run would be 2,000.
	took := time.Since(start)
	background := 2 + int64(took/(lease/3)) + int64(took/retry) + 2
	if d := lp.n.Load() + fp.n.Load() - before; d > background {
		t.Errorf("1000 job runs in %v cost %d statements, more than the leaders' %d in that time", took, d, background)
	}
	if runs != 1000 {
		t.Errorf("the leader's job ran %d times of 1000", runs)
	}

	l0, f0 := lp.n.Load(), fp.n.Load()
	const leases = 5
	window := time.NewTimer(leases * lease)
	<-window.C
	l, f := lp.n.Load()-l0, fp.n.Load()-f0
	t.Logf("in %d leases: leader %d statements, follower %d", leases, l, f)
	if l < 2*leases || l > 4*leases {
		t.Errorf("leader: %d statements in %d leases, want about 3 per lease", l, leases)
	}
	if want := int64(leases * lease / retry); f < want*2/3 || f > want*4/3 {
		t.Errorf("follower: %d statements, want about %d (one per retry)", f, want)
	}
}
