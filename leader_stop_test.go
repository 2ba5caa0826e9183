package shedlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A Stop whose ctx ends while a job still runs leaves the shutdown unfinished;
// a second Stop waits for that same shutdown (the job, then the release) and
// returns its outcome, rather than nil at once with the lease still held.
func TestLeaderStopAgainFinishesTheShutdown(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	a := newLeader(t, store.Provider("a"), time.Minute, shedlock.WithLeaderRetryPeriod(time.Millisecond))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	started, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(context.Context) error {
		close(started)
		<-release
		return nil
	}))
	go func() {
		defer close(returned)
		job.Run()
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := a.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Stop that cannot wait for the job: %v", err)
	}
	stops := make(chan error, 2)
	for range 2 { // concurrently, both waiting for the same shutdown
		go func() { stops <- a.Stop(context.Background()) }()
	}
	close(release)
	for range 2 {
		if err := <-stops; err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		select {
		case <-returned:
		default:
			t.Fatal("a Stop returned while the job still ran")
		}
		// The shutdown is done: the lease is free for anyone at once.
		l, err := store.Provider("c").TryLock(context.Background(), shedlock.LockConfig{Name: "group", LockAtMostFor: time.Minute})
		if err != nil {
			t.Fatalf("the lease after Stop returned: %v", err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("a Stop after the shutdown: %v", err)
	}
}

// The lock the leadership's context carries refuses Unlock and Extend with
// errors that errors.Is can tell: ErrUnsupported while the term lasts, and
// ErrLockLost too once it has ended. The context's cause on Stop names the
// leader, not an executor.
func TestLeaderContextLockRefusals(t *testing.T) {
	t.Parallel()
	a := newLeader(t, shedlocktest.NewMemoryStore().Provider("a"), time.Minute)
	a.Start()
	waitLeading(t, 5*time.Second, a)
	ctx, _ := a.Context()
	lock, ok := shedlock.LockFromContext(ctx)
	if !ok {
		t.Fatal("no lock in the leadership's context")
	}
	if err := lock.Unlock(context.Background()); !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, shedlock.ErrLockLost) {
		t.Errorf("Unlock while leading: %v", err)
	}
	if err := lock.Extend(context.Background(), time.Minute, 0); !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, shedlock.ErrLockLost) {
		t.Errorf("Extend while leading: %v", err)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lock.Unlock(context.Background()); !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, shedlock.ErrLockLost) {
		t.Errorf("Unlock after the term: %v", err)
	}
	if err := lock.Extend(context.Background(), time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Errorf("Extend after the term: %v", err)
	}
	cause := context.Cause(ctx)
	if !errors.Is(cause, shedlock.ErrStopped) || strings.Contains(cause.Error(), "executor") || !strings.Contains(cause.Error(), `"group"`) {
		t.Errorf("the cause of a Stop: %v", cause)
	}
}

// A job entered with EnterJob holds Stop's release until it leaves; once Stop
// has begun, EnterJob refuses new ones.
func TestLeaderEnterJob(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	a := newLeader(t, store.Provider("a"), time.Minute)
	if _, leave, leading := a.EnterJob(); leading {
		t.Fatal("EnterJob before the leader leads")
	} else {
		leave() // does nothing
	}
	a.Start()
	waitLeading(t, 5*time.Second, a)
	ctx, leave, leading := a.EnterJob()
	if !leading || ctx.Err() != nil {
		t.Fatalf("EnterJob while leading: %v, %v", leading, ctx.Err())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(context.Background()) }()
	<-ctx.Done() // Stop has begun: the term has ended
	if _, _, again := a.EnterJob(); again {
		t.Error("EnterJob after Stop began")
	}
	cfg := shedlock.LockConfig{Name: "group", LockAtMostFor: time.Minute}
	if _, err := store.Provider("c").TryLock(context.Background(), cfg); err == nil {
		t.Fatal("the lease was released while an entered job ran")
	}
	leave()
	leave() // a second call changes nothing
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if _, err := store.Provider("c").TryLock(context.Background(), cfg); err != nil {
		t.Fatalf("the lease after Stop: %v", err)
	}
}

// Stop renews the lease while it waits for the jobs: a job that takes longer
// than the lease to wind down after its context ended (a batch finishing, a
// flush) does not outlive the lease in the store, so no follower leads beside
// it while Stop still waits for it.
func TestLeaderStopKeepsTheLeaseWhileJobsWindDown(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const lease = 500 * time.Millisecond
	a, b := leaderAndFollower(t, store, lease)
	started, overlapped := make(chan struct{}), make(chan bool, 1)
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		// Winding down for a few leases after Stop ended the term: b must not
		// lead meanwhile, since Stop waits for this job before it lets go.
		for end := time.Now().Add(4 * lease); time.Now().Before(end); {
			if b.IsLeader() {
				overlapped <- true
				return nil
			}
			time.Sleep(time.Millisecond) // a poll with a deadline
		}
		overlapped <- false
		return nil
	}))
	go job.Run()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(context.Background()) }()
	if <-overlapped {
		t.Fatalf("b led while a's job still ran and a.Stop still waited for it (lease %v): "+
			"Stop's wait let a's lease lapse in the store", lease)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	waitLeading(t, 5*time.Second, b) // released once the job ended
}

// losingProvider's locks are refused renewal (ErrLockLost) once lost is set,
// as when another instance has taken the lease; refused counts the refusals.
type losingProvider struct {
	shedlock.LockProvider
	lost    atomic.Bool
	refused atomic.Int64
}

func (p *losingProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &losingLock{l, p}, nil
}

type losingLock struct {
	shedlock.Lock
	p *losingProvider
}

func (l *losingLock) Extend(ctx context.Context, most, least time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.p.lost.Load() {
		l.p.refused.Add(1)
		return fmt.Errorf("%w: taken by another", shedlock.ErrLockLost)
	}
	return l.Lock.Extend(ctx, most, least)
}

// A renewal refused while Stop waits for a job means a follower may lead
// beside it: Stop's outcome says so.
func TestLeaderStopReportsALeaseLostWhileJobsWindDown(t *testing.T) {
	t.Parallel()
	p := &losingProvider{LockProvider: shedlocktest.NewMemoryStore().Provider("a")}
	a := newLeader(t, p, 300*time.Millisecond)
	a.Start()
	waitLeading(t, 5*time.Second, a)
	started, refused := make(chan struct{}), make(chan bool, 1)
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // Stop has ended the term: the campaign renews no more
		p.lost.Store(true)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
			if p.refused.Load() > 0 {
				refused <- true
				return nil
			}
			time.Sleep(time.Millisecond) // a poll with a deadline
		}
		refused <- false
		return nil
	}))
	go job.Run()
	<-started
	err := a.Stop(context.Background())
	if !<-refused {
		t.Fatal("no renewal while Stop waited for the job")
	}
	if !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Stop after the lease was lost while it waited: %v", err)
	}
	if again := a.Stop(context.Background()); !errors.Is(again, shedlock.ErrLockLost) {
		t.Fatalf("a second Stop returns another outcome: %v", again)
	}
}

// The renewals last only as long as a Stop waits: once its ctx has ended,
// the lease runs out in the store and a follower leads, even though a job of
// the old leader still runs, rather than a job that never returns keeping the
// lease forever. A later Stop finishes the shutdown once the job has ended.
func TestLeaderStopPastItsCtxRenewsNoMore(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const lease = 300 * time.Millisecond
	a, b := leaderAndFollower(t, store, lease)
	started, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(context.Context) error {
		close(started)
		<-release
		return nil
	}))
	go func() {
		defer close(returned)
		job.Run()
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Stop that cannot wait for the job: %v", err)
	}
	waitLeading(t, 5*time.Second, b)
	close(release)
	<-returned
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("the Stop that finishes the shutdown: %v", err)
	}
}

// leaderAndFollower starts a, waits until it leads, then starts b, both on
// store with lease and a 10 ms retry period.
func leaderAndFollower(t *testing.T, store *shedlocktest.MemoryStore, lease time.Duration) (a, b *shedlock.Leader) {
	t.Helper()
	a = newLeader(t, store.Provider("a"), lease, shedlock.WithLeaderRetryPeriod(10*time.Millisecond))
	b = newLeader(t, store.Provider("b"), lease, shedlock.WithLeaderRetryPeriod(10*time.Millisecond))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	b.Start()
	return a, b
}
