package shedlocktest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/shedlock-go/shedlock"
)

var _ shedlock.Admin = memoryProvider{}

// Locks returns every name the store has a row, a pause or run requests
// for, by name. A row stays after its release, as in a SQL table.
func (p memoryProvider) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	names := make([]string, 0, len(s.rows))
	for name := range s.rows {
		names = append(names, name)
	}
	for name := range s.paused {
		names = append(names, name)
	}
	for name := range s.runs {
		names = append(names, name)
	}
	slices.Sort(names)
	infos := make([]shedlock.LockInfo, 0, len(names))
	for _, name := range slices.Compact(names) {
		if info, ok := s.info(name, now); ok {
			infos = append(infos, info)
		}
	}
	return infos, nil
}

// info returns name's lock as an operator sees it; false when the store
// keeps nothing of name.
func (s *MemoryStore) info(name string, now time.Time) (shedlock.LockInfo, bool) {
	info := shedlock.LockInfo{Name: name, Control: s.control(name, now)}
	r, ok := s.rows[name]
	if !ok {
		return info, info.Control != shedlock.Control{}
	}
	info.LockedBy, info.LockedAt, info.LockUntil = r.owner, r.lockedAt.UTC(), r.until.UTC()
	if r.taken != 0 {
		info.LockedBy += "#" + strconv.FormatUint(r.taken, 10)
	}
	if r.until.After(now) {
		info.Held, info.TimeLeft = true, r.until.Sub(now)
	}
	return info, true
}

// Inspect returns the lock of exactly name; shedlock.ErrLockNotFound when the
// store keeps nothing of it.
func (p memoryProvider) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	if err := ctx.Err(); err != nil {
		return shedlock.LockInfo{}, err
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	info, ok := p.s.info(name, time.Now())
	if !ok {
		return shedlock.LockInfo{}, fmt.Errorf("%w: %q", shedlock.ErrLockNotFound, name)
	}
	return info, nil
}

// ForceUnlock frees name's lock whoever holds it; its holder's next Unlock
// or Extend is shedlock.ErrLockLost. The pause and the run requests stay.
func (p memoryProvider) ForceUnlock(ctx context.Context, name string) (shedlock.LockInfo, error) {
	return p.forceUnlock(ctx, name, nil)
}

// ForceUnlockSeen frees the acquisition seen shows, never one taken since
// (shedlock.ErrLockChanged).
func (p memoryProvider) ForceUnlockSeen(ctx context.Context, seen shedlock.LockInfo) (shedlock.LockInfo, error) {
	return p.forceUnlock(ctx, seen.Name, &seen)
}

func (p memoryProvider) forceUnlock(ctx context.Context, name string, seen *shedlock.LockInfo) (shedlock.LockInfo, error) {
	if err := ctx.Err(); err != nil {
		return shedlock.LockInfo{}, err
	}
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	r, ok := s.rows[name]
	if !ok {
		return shedlock.LockInfo{}, fmt.Errorf("%w: %q", shedlock.ErrLockNotFound, name)
	}
	before, _ := s.info(name, now)
	if seen != nil && (before.LockedBy != seen.LockedBy || !before.LockedAt.Equal(seen.LockedAt)) {
		return shedlock.LockInfo{}, fmt.Errorf("%w: lock %q is now held by %s", shedlock.ErrLockChanged, name, before.LockedBy)
	}
	s.rows[name] = memoryRow{until: now, lockedAt: r.lockedAt, owner: shedlock.ForceUnlockedBy}
	return before, nil
}

// HealthCheck reports nil: the store is this process's memory.
func (p memoryProvider) HealthCheck(ctx context.Context) error { return ctx.Err() }

// EnsureTable does nothing: the store needs no table.
func (p memoryProvider) EnsureTable(context.Context) error { return nil }
