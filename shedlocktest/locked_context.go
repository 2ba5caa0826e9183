package shedlocktest

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock"
)

// LockedContext returns a copy of ctx that carries a lock held in no store, for
// unit tests of code that calls shedlock.AssertLocked or shedlock.LockFromContext
// without running it through an executor: AssertLocked passes, and the lock's
// Extend and Unlock succeed.
func LockedContext(ctx context.Context) context.Context {
	return shedlock.ContextWithLock(ctx, heldLock{})
}

// heldLock is a lock that nothing else can take.
type heldLock struct{}

func (heldLock) Unlock(context.Context) error                               { return nil }
func (heldLock) Extend(context.Context, time.Duration, time.Duration) error { return nil }
