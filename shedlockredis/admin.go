package shedlockredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
)

var _ shedlock.Admin = (*Provider)(nil)

// A lock in Redis is a key that exists while the lock is held: Locks, Inspect
// and the force unlocks see only held locks (a key without a time to live,
// which someone made with PERSIST, is held with a TimeLeft of -1 and a zero
// LockUntil, until deleted). A lock nobody holds has no key, and is
// shedlock.ErrLockNotFound. The value a lock's key holds, ADDED:<time>@<holder>,
// gives LockedAt (the taker's clock, as Java ShedLock writes it; nothing
// compares it) and LockedBy: for a provider of this package
// "<owner>:<token>-<acquisition>", for Java ShedLock "<host>:<uuid>". A value of
// another form is LockedBy whole, with a zero LockedAt.

// forceUnlockAttempts bounds how often ForceUnlockSeen reads again because the
// key changed between its read and its delete, as the SQL providers do.
const forceUnlockAttempts = 5

// scanCount is the COUNT hint of each SCAN, and the keys read per pipeline.
const scanCount = 500

// Locks returns every held lock of the provider's env, by name, and every
// name paused or with run-now requests (its Control), held or not, read by
// SCAN on every primary (each of a Cluster). See [shedlock.Admin].
func (p *Provider) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	names, err := p.lockNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the locks of %s: %w", p.where(), withContext(ctx, err))
	}
	locks := make([]shedlock.LockInfo, 0, len(names))
	for chunk := range slices.Chunk(names, scanCount) {
		read, err := p.readLocks(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("shedlock: read the locks of %s: %w", p.where(), withContext(ctx, err))
		}
		for _, l := range read {
			locks = append(locks, l.LockInfo)
		}
	}
	return locks, nil
}

// Inspect returns the lock of exactly name, with its Control;
// shedlock.ErrLockNotFound when it has no key (nobody holds it) and is
// neither paused nor has run-now requests. See [shedlock.Admin].
func (p *Provider) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	l, err := p.readLock(ctx, name)
	return l.LockInfo, err
}

// readLock reads the lock of exactly name, with the value its key holds.
func (p *Provider) readLock(ctx context.Context, name string) (storedLock, error) {
	if name == "" {
		return storedLock{}, fmt.Errorf("%w: the name is empty", shedlock.ErrLockNotFound)
	}
	locks, err := p.readLocks(ctx, []string{name})
	if err != nil {
		return storedLock{}, fmt.Errorf("shedlock: read lock %q of %s: %w", name, p.where(), withContext(ctx, err))
	}
	if len(locks) == 0 {
		return storedLock{}, p.notFound(name)
	}
	return locks[0], nil
}

// storedLock is a lock as read, and the value its key held: "" when it has
// no key, and is listed for its Control.
type storedLock struct {
	shedlock.LockInfo
	value string
}

// ForceUnlock deletes the lock's key whoever holds it, and returns the lock as
// it was just before; the holder's next Unlock or Extend returns
// shedlock.ErrLockLost. shedlock.ErrLockNotFound when there is no key. Read
// [shedlock.Admin] for when that is safe.
func (p *Provider) ForceUnlock(ctx context.Context, name string) (shedlock.LockInfo, error) {
	if name == "" {
		return shedlock.LockInfo{}, fmt.Errorf("%w: the name is empty", shedlock.ErrLockNotFound)
	}
	info, deleted, err := p.deleteIf(ctx, name, "")
	switch {
	case err != nil:
		return shedlock.LockInfo{}, err
	case !deleted:
		return shedlock.LockInfo{}, p.notFound(name)
	}
	return info, nil
}

// ForceUnlockSeen deletes the lock's key only while it holds the acquisition
// seen shows (the same LockedBy and LockedAt), extended since or not, and
// returns it as it was just before. Another acquisition is an error wrapping
// shedlock.ErrLockChanged that names the holder now, and nothing is deleted;
// shedlock.ErrLockNotFound when there is no key. See [shedlock.Admin].
func (p *Provider) ForceUnlockSeen(ctx context.Context, seen shedlock.LockInfo) (shedlock.LockInfo, error) {
	for range forceUnlockAttempts {
		now, err := p.readLock(ctx, seen.Name)
		if err == nil && now.value == "" {
			err = p.notFound(seen.Name)
		}
		if err != nil {
			return shedlock.LockInfo{}, err
		}
		if now.LockedBy != seen.LockedBy || !now.LockedAt.Equal(seen.LockedAt) {
			return shedlock.LockInfo{}, fmt.Errorf("%w: lock %q of %s: it was taken by %q at %s when shown, and is now "+
				"taken by %q at %s; nothing was freed", shedlock.ErrLockChanged, seen.Name, p.where(),
				seen.LockedBy, seen.LockedAt.Format(time.RFC3339Nano), now.LockedBy, now.LockedAt.Format(time.RFC3339Nano))
		}
		info, deleted, err := p.deleteIf(ctx, seen.Name, now.value)
		if err != nil {
			return shedlock.LockInfo{}, err
		}
		if deleted {
			return info, nil
		}
	}
	return shedlock.LockInfo{}, fmt.Errorf("%w: force unlock %q of %s: the lock changed hands %d times while being freed; try again",
		shedlock.ErrLockChanged, seen.Name, p.where(), forceUnlockAttempts)
}

// HealthCheck reports whether the server is reachable and takes locks: the
// first-use check of TryLock (the eviction policy, unless WithEvictionAllowed;
// once passed, not repeated), then on every call a PEXPIRE of a key that no
// lock has, which a read-only replica or a user without write rights refuses
// and which changes nothing. On a Cluster it reaches the primary of that key's
// slot. See [shedlock.Admin].
func (p *Provider) HealthCheck(ctx context.Context) error {
	if err := p.checkServer(ctx); err != nil {
		if errors.Is(err, shedlock.ErrUnsafeStore) {
			return err
		}
		return fmt.Errorf("shedlock: health check of %s: %w", p.where(), withContext(ctx, err))
	}
	// A lock name cannot be empty, so this key is no lock's.
	if err := p.client.PExpire(ctx, p.keys.Prefix(), time.Millisecond).Err(); err != nil {
		return fmt.Errorf("shedlock: health check of %s: %w", p.where(), withContext(ctx, err))
	}
	return nil
}

// EnsureTable does nothing and returns nil: Redis keeps each lock as a key of
// its own, made when the lock is taken, and needs no table. It sends nothing.
func (p *Provider) EnsureTable(context.Context) error { return nil }

// where names the locks' place in messages: "env default".
func (p *Provider) where() string { return p.keys.Where() }

func (p *Provider) notFound(name string) error { return p.keys.NotFound(name) }

// deleteIf runs forceUnlockScript on name's key: it deletes the key if it
// holds want (any value when want is ""), and returns the lock as it was just
// before, and whether it deleted it. A key that is gone or holds another value
// is not an error: info is zero when it is gone.
func (p *Provider) deleteIf(ctx context.Context, name, want string) (info shedlock.LockInfo, deleted bool, err error) {
	now, err := p.client.Time(ctx).Result()
	if err != nil {
		return info, false, fmt.Errorf("shedlock: force unlock %q of %s: read the server's clock: %w", name, p.where(), withContext(ctx, err))
	}
	reply, err := redis.NewScript(forceUnlockScript).Run(ctx, p.client, []string{p.Key(name)}, want).Slice()
	if err != nil {
		return info, false, fmt.Errorf("shedlock: force unlock %q of %s: %w", name, p.where(), withContext(ctx, err))
	}
	if len(reply) != 3 {
		return info, false, nil
	}
	value, _ := reply[1].(string)
	pttl, _ := reply[2].(int64)
	return lockInfo(name, value, pttl, now), reply[0] == int64(1), nil
}

// lockInfo reads a lock's value, ADDED:<time>@<holder>, and its PTTL in
// milliseconds (-1 for a key without a time to live).
func lockInfo(name, value string, pttl int64, serverNow time.Time) shedlock.LockInfo {
	info := shedlock.LockInfo{Name: name, LockedBy: value}
	// A key kept for LockAtLeastFor after its release is still the holder's.
	if at, by, ok := kvstore.ParseValue(strings.TrimSuffix(value, releasedMark)); ok {
		info.LockedAt, info.LockedBy = at, by
	}
	switch {
	case pttl == -1:
		info.Held, info.TimeLeft = true, -1
	case pttl > 0:
		info.Held, info.TimeLeft = true, time.Duration(pttl)*time.Millisecond
		info.LockUntil = serverNow.Add(info.TimeLeft).UTC().Truncate(time.Millisecond)
	}
	return info
}

// globEscape quotes the characters SCAN's MATCH pattern reads as a glob.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
