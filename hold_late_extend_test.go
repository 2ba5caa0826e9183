package shedlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// lateExtends is a store whose Extends reach it only once the task's context
// has ended (after is closed by then): the store still holds the lock, a
// margin past the task's deadline, and extends it.
type lateExtends struct {
	shedlock.LockProvider
	after <-chan struct{}
}

func (p lateExtends) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return lateExtend{l, p.after}, nil
}

type lateExtend struct {
	shedlock.Lock
	after <-chan struct{}
}

func (l lateExtend) Extend(ctx context.Context, most, least time.Duration) error {
	<-l.after
	return l.Lock.Extend(ctx, most, least)
}

// A task's Extend that the store applies after the task's hold has run out
// must not report success: the task's deadline did not move and its context
// has ended, so a nil from Extend ("extends the lock and moves the task's
// deadline to match") would tell the task it may go on under a lock it can no
// longer rely on.
func TestTaskExtendAnsweredAfterTheHoldEndedIsNoSuccess(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	p := lateExtends{shedlocktest.NewMemoryStore().Provider("a"), ended}
	ex := shedlock.NewExecutor(p)
	defer func() { _ = ex.Stop(context.Background()) }()
	var extendErr, ctxErr error
	ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "late-extend", LockAtMostFor: time.Second},
		func(ctx context.Context) error {
			go func() {
				<-ctx.Done() // the hold ran out: the store still holds the lock for its margin
				close(ended)
			}()
			l, _ := shedlock.LockFromContext(ctx)
			extendErr = l.Extend(context.Background(), time.Minute, 0)
			ctxErr = ctx.Err()
			return nil
		})
	if !ran || err != nil {
		t.Fatalf("Run: ran %v, err %v", ran, err)
	}
	if ctxErr == nil {
		t.Fatal("the task's context had not ended when the Extend returned")
	}
	if extendErr == nil {
		t.Fatalf("Extend returned nil although the task's hold had ended (%v): the task was told its lock was extended", ctxErr)
	}
	if !errors.Is(extendErr, shedlock.ErrLockLost) && !errors.Is(extendErr, shedlock.ErrLockExpired) {
		t.Fatalf("Extend after the hold ended: %v, want ErrLockLost or ErrLockExpired", extendErr)
	}
}
