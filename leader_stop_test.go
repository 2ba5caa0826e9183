package shedlock_test

import (
	"context"
	"errors"
	"strings"
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
	a := newLeader(t, store.Provider("a"), time.Minute, shedlock.WithRetryPeriod(time.Millisecond))
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
