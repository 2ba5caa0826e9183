package shedlockredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
)

var _ shedlock.FireLocker = (*Provider)(nil)

// FiredKey returns the key where CatchUp records the last fire time, in
// milliseconds since 1970, whose run of the lock keyed key succeeded: beside
// its fence key (FenceKey), in the same Cluster hash slot. "" where the key
// can have no fence key; such a lock cannot be a CatchUp job's.
func FiredKey(key string) string { return besideKey(key, "fired") }

// fireLock is a lock taken by TryLockFire, for one fire time.
type fireLock struct {
	*lock
	fired string // the fired key
	fire  int64  // ms since 1970
}

// Own is the lock the fire lock wraps (see kvstore.Owned).
func (l *fireLock) Own() *lock {
	if l == nil {
		return nil
	}
	return l.lock
}

// TryLockFire takes cfg's lock for the run of fire time fire, only if the
// lock's fired key (FiredKey) records an older fire time, or none, in one
// script. See shedlock.FireLocker and shedlock.CatchUp.
func (p *Provider) TryLockFire(ctx context.Context, cfg shedlock.LockConfig, fire time.Time) (shedlock.FireLock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l, err := p.prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if l.keys[1] == "" {
		return nil, fmt.Errorf("%w: lock %q: a key with a \"}\" but no hash tag has no fired key, which CatchUp needs",
			shedlock.ErrInvalidConfig, cfg.Name)
	}
	fl := &fireLock{lock: l, fired: FiredKey(l.keys[0]), fire: fire.UnixMilli()}
	l.fence, err = p.fireAcquire.Run(ctx, p.client, []string{l.keys[0], l.keys[1], fl.fired, l.keys[2]}, l.set[2], l.set[5], fl.fire).Int64()
	if err := l.taken(ctx, err); err != nil {
		return nil, err
	}
	return fl, nil
}

// UnlockSucceeded releases the lock as Unlock does, keeping it until leastFor
// after it was taken, and records its fire time in the fired key unless a
// later one is, in one script.
func (l *fireLock) UnlockSucceeded(ctx context.Context, leastFor time.Duration) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	return l.released(ctx, l.p.fireRelease.Run(ctx, l.p.client, []string{l.keys[0], l.releaseKeys[1], l.fired},
		l.value, millis(leastFor)-l.held, l.ttl, l.fire))
}

// LastFire returns the fire time recorded in the fired key of name's lock.
func (p *Provider) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	fired := FiredKey(p.Key(name))
	if fired == "" {
		return time.Time{}, false, nil
	}
	v, err := p.client.Get(ctx, fired).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("shedlock: read the last fire time of %q: %w", name, withContext(ctx, err))
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("shedlock: the fired key of %q holds %q, not milliseconds since 1970", name, v)
	}
	return time.UnixMilli(ms), true, nil
}
