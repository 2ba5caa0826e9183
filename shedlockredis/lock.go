package shedlockredis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
)

// lock is one acquisition. Its mutex orders its own Unlock and Extend, so an
// Extend can never revive a lock that an Unlock has let go.
type lock struct {
	p     *Provider
	name  string
	keys  [1]string // the key, as the scripts take it
	value string    // unique to this acquisition

	// The arguments of SET and of the release script. go-redis takes []any, and
	// boxing a string or an integer over 255 allocates: boxed once per
	// acquisition here, not once per command, and the slices cost nothing.
	set     [6]any // set key value nx px ttl
	release [3]any // value, ms of LockAtLeastFor left when ttl was set, ttl

	mu    sync.Mutex
	ttl   int64 // ms: the time to live set last, by SET or Extend
	held  int64 // ms the lock had been held, by the server's clock, when ttl was set
	least int64 // ms: LockAtLeastFor, counted from the acquisition
	done  bool  // released, or found lost
}

// Unlock releases the lock, keeping it until LockAtLeastFor after it was taken:
// one script that deletes the key, or shortens its time to live to what is left
// of LockAtLeastFor, only while the key holds this acquisition's value.
// ErrLockLost when it no longer does (or Unlock already ran); an error wrapping
// ErrReleaseFailed when the script could not run, and the lock stays until its
// time to live ends. The client's MaxRetries governs retries.
func (l *lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return shedlock.ErrLockLost
	}
	l.release[1] = l.least - l.held
	ours, err := l.p.release.Run(ctx, l.p.client, l.keys[:], l.release[:]...).Int64()
	if err != nil {
		return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, withContext(ctx, err))
	}
	l.done = true
	if ours != 1 {
		return shedlock.ErrLockLost
	}
	return nil
}

// Extend sets the key's time to live to lockAtMostFor while it holds this
// acquisition's value; ErrLockLost when it does not (it expired, was taken by
// another, or Unlock ran). lockAtLeastFor replaces LockAtLeastFor, still
// counted from the acquisition.
func (l *lock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	cfg := shedlock.LockConfig{Name: l.name, LockAtMostFor: lockAtMostFor, LockAtLeastFor: lockAtLeastFor}
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return shedlock.ErrLockLost
	}
	ttl := millis(lockAtMostFor)
	pttl, err := l.p.extend.Run(ctx, l.p.client, l.keys[:], l.value, ttl).Int64()
	if err != nil {
		return fmt.Errorf("shedlock: extend %q: %w", l.name, withContext(ctx, err))
	}
	if pttl == extendNotOurs {
		l.done = true
		return shedlock.ErrLockLost
	}
	if pttl >= 0 {
		l.held += l.ttl - pttl // server ms since the time to live was last set
	}
	l.ttl, l.least = ttl, millis(lockAtLeastFor)
	l.release[2] = ttl
	return nil
}
