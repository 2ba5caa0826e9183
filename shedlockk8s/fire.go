package shedlockk8s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/shedlock-go/shedlock"
)

// fireLock is a lock taken by TryLockFire, for one fire time.
type fireLock struct {
	*lock
	fire int64 // the fire time, in milliseconds since 1970
}

// TryLockFire takes cfg's lock for the run of fire time fire, as TryLock
// does, only if the Lease's catch-up record (AnnotationLastFire) is older
// than fire, or absent: the record lives in the Lease itself, so the update
// that takes it, guarded by the resourceVersion of the version whose record
// was read, is the one atomic step. See shedlock.FireLocker and
// shedlock.CatchUp.
func (p *Provider) TryLockFire(ctx context.Context, cfg shedlock.LockConfig, fire time.Time) (shedlock.FireLock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ms := fire.UnixMilli()
	if ms < 0 {
		return nil, fmt.Errorf("%w: lock %q: fire time %v is before 1970", shedlock.ErrInvalidConfig, cfg.Name, fire)
	}
	l, err := p.acquire(ctx, cfg, func(s state) bool { return s.lastFire < ms })
	if err != nil {
		return nil, err
	}
	return &fireLock{lock: l, fire: ms}, nil
}

// UnlockSucceeded releases the lock as Unlock does, keeping it until leastFor
// after it was taken, and records its fire time in the same update, unless a
// later one is recorded. ErrLockLost when the Lease is another's; nothing is
// recorded then.
func (l *fireLock) UnlockSucceeded(ctx context.Context, leastFor time.Duration) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	return l.release(ctx, max(leastFor, 0), func(w *coordinationv1.Lease) {
		if stateOf(w).lastFire < l.fire {
			w.Annotations[AnnotationLastFire] = strconv.FormatInt(l.fire, 10)
		}
	})
}

// LastFire returns the fire time recorded in the Lease of name's lock; ok is
// false when there is none, or no Lease.
func (p *Provider) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	cur, err := p.get(ctx, name)
	if errors.Is(err, shedlock.ErrLockNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("shedlock: read the last fire time of %q: %w", name, err)
	}
	s := stateOf(cur)
	if s.lastFire < 0 {
		if v, ok := cur.Annotations[AnnotationLastFire]; ok {
			return time.Time{}, false, fmt.Errorf("shedlock: the Lease of %q records %q as its last fire time, not milliseconds since 1970", name, v)
		}
		return time.Time{}, false, nil
	}
	return time.UnixMilli(s.lastFire), true, nil
}
