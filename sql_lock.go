package shedlock

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlcore"
)

// endChecker is a store's limit on lock_until, checked again on Extend. It is an
// interface holding the provider pointer, not a method value, so that taking a
// lock does not allocate a closure.
type endChecker interface {
	checkEnd(name string, mostFor time.Duration) error
}

// sqlLock is a lock taken by a SQL provider.
type sqlLock struct {
	h     *sqlcore.Handle
	name  string
	limit endChecker // nil: the store has no limit
}

// Unlock releases the lock, keeping it until LockAtLeastFor after it was taken. A
// failed statement is retried; when every try fails the error wraps
// ErrReleaseFailed and the lock stays until its lock_until.
func (l *sqlLock) Unlock(ctx context.Context) error {
	return l.h.Release(ctx)
}

// Extend moves the lock's end to now + lockAtMostFor; ErrLockLost when it has
// expired or is no longer ours.
func (l *sqlLock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	if err := validateDurations(l.name, lockAtMostFor, lockAtLeastFor); err != nil {
		return err
	}
	if l.limit != nil {
		if err := l.limit.checkEnd(l.name, lockAtMostFor); err != nil {
			return err
		}
	}
	return l.h.Extend(ctx, lockAtMostFor, lockAtLeastFor)
}
