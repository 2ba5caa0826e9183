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

// downProvider's Extends fail, without an answer from the store, once down is
// set: the store is unreachable for renewals.
type downProvider struct {
	shedlock.LockProvider
	down atomic.Bool
}

func (p *downProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return downLock{l, p}, nil
}

type downLock struct {
	shedlock.Lock
	p *downProvider
}

func (l downLock) Extend(ctx context.Context, most, least time.Duration) error {
	if l.p.down.Load() {
		return errors.New("store unreachable")
	}
	return l.Lock.Extend(ctx, most, least)
}

// Two concurrent Stops wait for a job while every renewal fails: the lease
// runs out in the store, a follower leads beside the job, and both Stops say
// so (ErrLockLost) once the job has returned.
func TestLeaderConcurrentStopsReportALeaseRunOutWhileJobsWindDown(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const lease = 200 * time.Millisecond
	p := &downProvider{LockProvider: store.Provider("a")}
	a := newLeader(t, p, lease, shedlock.WithLeaderRetryPeriod(5*time.Millisecond))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	b := newLeader(t, store.Provider("b"), lease, shedlock.WithLeaderRetryPeriod(5*time.Millisecond))
	b.Start()
	started, release := make(chan struct{}), make(chan struct{})
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		close(started)
		<-release
		return nil
	}))
	go job.Run()
	<-started
	p.down.Store(true)
	stops := make(chan error, 2)
	for range 2 {
		go func() { stops <- a.Stop(context.Background()) }()
	}
	waitLeading(t, 5*time.Second, b) // a's lease ran out in the store
	close(release)
	for range 2 {
		if err := <-stops; !errors.Is(err, shedlock.ErrLockLost) {
			t.Fatalf("Stop after the lease ran out while it waited for a job: %v, want ErrLockLost", err)
		}
	}
}

// EnterJob racing Stop: "once Stop has begun, leading is false, ctx has
// ended". A caller told not to lead must never be handed a live context.
func TestLeaderEnterJobRacingStopNeverGivesALiveContextUnled(t *testing.T) {
	t.Parallel()
	for round := range 200 {
		a, err := shedlock.NewLeader(shedlocktest.NewMemoryStore().Provider("a"), "group", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		a.Start()
		waitLeading(t, 5*time.Second, a)
		done := make(chan struct{})
		bad := make(chan string, 1)
		go func() {
			defer close(done)
			for {
				ctx, leave, leading := a.EnterJob()
				leave()
				if !leading {
					if ctx.Err() == nil {
						bad <- "EnterJob: leading false with a context that has not ended"
					}
					return
				}
			}
		}()
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
		select {
		case msg := <-bad:
			t.Fatalf("round %d: %s", round, msg)
		default:
		}
	}
}
