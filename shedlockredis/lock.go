package shedlockredis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// lock is one acquisition. Its hold orders its own Unlock and Extend, so an
// Extend can never revive a lock that an Unlock has let go; the fields below
// hold are read and written only within it.
type lock struct {
	p    *Provider
	name string
	keys [3]string // the key, its fence key and its paused key (see FenceKey, PausedKey), as the acquiring scripts take them
	// The key and its released key (see releasedKey), as releaseScript takes
	// them; the second is "" for a name that has none.
	releaseKeys [2]string
	value       string // unique to this acquisition
	fence       int64  // the fencing token; 0 for none

	// The arguments of SET and of the release script. go-redis takes []any, and
	// boxing a string or an integer over 255 allocates: boxed once per
	// acquisition here, not once per command, and the slices cost nothing.
	set     [6]any // set key value nx px ttl
	release [3]any // value, ms of LockAtLeastFor left when ttl was set, ttl

	hold     kvstore.Hold
	ttl      int64     // ms: the time to live set last, by SET or Extend; the least of those it may be after an Extend's answer was lost
	held     int64     // ms the lock had been held when ttl was set, or less, never more (see Extend)
	least    int64     // ms: LockAtLeastFor, counted from the acquisition
	ends     time.Time // when the time to live set last ends, at the earliest, on this process's clock; the earliest it may be after an Extend's answer was lost
	acquired time.Time // when the acquisition's answer came, after the server set the key
}

// Unlock releases the lock, keeping it until LockAtLeastFor after it was taken:
// one script that deletes the key, or shortens its time to live to what is left
// of LockAtLeastFor, only while the key holds this acquisition's value.
// ErrLockLost when it no longer does (or Unlock already ran); an error wrapping
// ErrReleaseFailed when the script could not run or its answer was lost, and
// the lock stays until its time to live ends unless the script ran. The
// client's MaxRetries governs retries: a script sent again, by the client or
// by a call of Unlock after an error, finds its own release done and reports
// nil (within a minute of it, see releaseScript), even when another holder has
// taken the lock since.
func (l *lock) Unlock(ctx context.Context) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	l.release[1] = l.least - l.held
	keys := l.releaseKeys[:]
	if keys[1] == "" {
		keys = keys[:1]
	}
	return l.released(ctx, l.p.release.Run(ctx, l.p.client, keys, l.release[:]...))
}

// released reads the reply of a release script, within the hold: 1 when it
// released this acquisition, else ErrLockLost; a script that may not have
// run is ErrReleaseFailed, and the lock is not done.
func (l *lock) released(ctx context.Context, reply *redis.Cmd) error {
	ours, err := reply.Int64()
	if err != nil {
		return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, withContext(ctx, err))
	}
	l.hold.Finish()
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
	if err := lockcfg.Durations(l.name, lockAtMostFor, lockAtLeastFor); err != nil { // the name was checked by TryLock
		return err
	}
	return l.ExtendChecked(ctx, lockAtMostFor, lockAtLeastFor, lockcfg.Checked{})
}

// ExtendChecked is Extend on durations the executor has checked
// (lockcfg.Checked, which only this repository's modules can name).
func (l *lock) ExtendChecked(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration, _ lockcfg.Checked) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	ttl := millis(lockAtMostFor)
	sent := time.Now()
	pttl, err := l.p.extend.Run(ctx, l.p.client, l.keys[:1], l.value, ttl).Int64()
	answered := time.Now()
	if err != nil {
		// The script may have run: the time to live set last is this one
		// or the one before. Counting from the lesser never counts more
		// time held than there was, so LockAtLeastFor is never cut short;
		// ending at the earlier, CheckHeld never relies on a lock that may
		// have run out. Extend and Unlock still find the key if it did not.
		l.ttl = min(l.ttl, ttl)
		l.release[2] = l.ttl
		l.ends = minTime(l.ends, sent.Add(lockAtMostFor))
		return fmt.Errorf("shedlock: extend %q: %w", l.name, withContext(ctx, err))
	}
	if pttl == extendNotOurs {
		l.hold.Finish()
		return shedlock.ErrLockLost
	}
	// Server ms since the time to live was last set, from its PTTL; none
	// when it was set later than the client knows, by an Extend whose
	// answer was lost.
	held := l.held
	if pttl >= 0 {
		held += max(l.ttl-pttl, 0)
	}
	if pttl >= ttl-millis(answered.Sub(sent))-1 {
		// The PTTL may be one this call set: go-redis sends a script again
		// when the connection drops before its answer, and the second send
		// answers with the time to live the first set. After a shorter
		// LockAtMostFor, that counts time that never passed. Time held is
		// then at most what this process's monotonic clock measured from
		// the acquisition's answer to this send.
		held = min(held, int64(sent.Sub(l.acquired)/time.Millisecond))
	}
	l.held = held
	l.ttl, l.least = ttl, millis(lockAtLeastFor)
	l.release[2] = ttl
	l.ends = sent.Add(lockAtMostFor)
	return nil
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Own is the lock itself (see kvstore.Owned).
func (l *lock) Own() *lock { return l }

// Fence returns the acquisition's fencing token, which Extend keeps; ok is
// false for a name whose key can have no fence key (see FenceKey).
func (l *lock) Fence() (fence int64, ok bool) { return l.fence, l.fence != 0 }

// CheckHeld reports, without asking Redis, whether the lock can still be relied
// on: nil until it is released, found lost, or past the time to live set last.
// After an Extend whose answer was lost, that is the earlier of its time to
// live and the one before: the lock may have run out at either. A key deleted
// behind its back (FLUSHALL, eviction, a forced unlock) is found only by the
// next Extend or Unlock.
func (l *lock) CheckHeld() error {
	return l.hold.Check(l.name, func() time.Time { return l.ends })
}
