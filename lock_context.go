package shedlock

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotLocked is returned by AssertLocked when its context carries no lock, or
// one that can no longer be relied on.
var ErrNotLocked = errors.New("shedlock: not running under a lock")

type lockKey struct{}

// ContextWithLock returns a copy of parent that carries l: LockFromContext
// returns it and AssertLocked passes. The executor gives every task such a
// context itself; use this where a lock is taken by hand with TryLock, and in
// tests (shedlocktest.LockedContext gives one with no store behind it).
func ContextWithLock(parent context.Context, l Lock) context.Context {
	return context.WithValue(parent, lockKey{}, l)
}

// LockFromContext returns the lock a task runs under: the executor puts it in
// every task's context. Through it the task can Extend its lock by hand, which
// also moves its context's deadline; its Unlock is refused, since the executor
// releases the lock when the task returns.
func LockFromContext(ctx context.Context) (Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(Lock)
	return l, ok && l != nil
}

// AssertLocked reports whether ctx belongs to code running under a lock, as Java
// ShedLock's LockAssert does: nil inside a task run by the executor, or under a
// context from ContextWithLock. Otherwise it returns an error wrapping
// ErrNotLocked, also when the task's lock was lost, ran out or was released
// (the error then wraps that cause too). Call it at the top of code that must
// never run unlocked, so that a caller who forgot the lock finds out at once.
func AssertLocked(ctx context.Context) error {
	l, ok := LockFromContext(ctx)
	if !ok {
		return ErrNotLocked
	}
	if h, ok := l.(leaseLock); ok {
		if cause := h.l.lostCause(); cause != nil {
			return fmt.Errorf("%w: lock %q: %w", ErrNotLocked, h.l.cfg.Name, cause)
		}
	}
	return nil
}
