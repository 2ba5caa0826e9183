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
	keys  [2]string // the key and its fence key (see FenceKey), as the scripts take them
	value string    // unique to this acquisition
	fence int64     // the fencing token; 0 for none

	// The arguments of SET and of the release script. go-redis takes []any, and
	// boxing a string or an integer over 255 allocates: boxed once per
	// acquisition here, not once per command, and the slices cost nothing.
	set     [6]any // set key value nx px ttl
	release [3]any // value, ms of LockAtLeastFor left when ttl was set, ttl

	mu    sync.Mutex
	ttl   int64     // ms: the time to live set last, by SET or Extend; the least of those it may be after an Extend's answer was lost
	held  int64     // ms the lock had been held, by the server's clock, when ttl was set
	least int64     // ms: LockAtLeastFor, counted from the acquisition
	done  bool      // released, or found lost
	ends  time.Time // when the time to live set last ends, at the latest, on this process's clock
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
	ours, err := l.p.release.Run(ctx, l.p.client, l.keys[:1], l.release[:]...).Int64()
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
	sent := time.Now()
	pttl, err := l.p.extend.Run(ctx, l.p.client, l.keys[:1], l.value, ttl).Int64()
	if err != nil {
		// The script may have run: the time to live set last is this one
		// or the one before. Counting from the lesser never counts more
		// time held than there was, so LockAtLeastFor is never cut short.
		l.ttl = min(l.ttl, ttl)
		l.release[2] = l.ttl
		return fmt.Errorf("shedlock: extend %q: %w", l.name, withContext(ctx, err))
	}
	if pttl == extendNotOurs {
		l.done = true
		return shedlock.ErrLockLost
	}
	if pttl >= 0 {
		// Server ms since the time to live was last set; none when it was set
		// later than the client knows, by an Extend whose answer was lost.
		l.held += max(l.ttl-pttl, 0)
	}
	l.ttl, l.least = ttl, millis(lockAtLeastFor)
	l.release[2] = ttl
	l.ends = sent.Add(lockAtMostFor)
	return nil
}

// Fence returns the acquisition's fencing token, which Extend keeps; ok is
// false for a name whose key can have no fence key (see FenceKey).
func (l *lock) Fence() (fence int64, ok bool) { return l.fence, l.fence != 0 }

// CheckHeld reports, without asking Redis, whether the lock can still be relied
// on: nil until it is released, found lost, or past the time to live set last.
// A key deleted behind its back (FLUSHALL, eviction, a forced unlock) is found
// only by the next Extend or Unlock.
func (l *lock) CheckHeld() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.done:
		return fmt.Errorf("%w: lock %q: released or found lost", shedlock.ErrLockLost, l.name)
	case !time.Now().Before(l.ends):
		return fmt.Errorf("%w: lock %q", shedlock.ErrLockExpired, l.name)
	}
	return nil
}
