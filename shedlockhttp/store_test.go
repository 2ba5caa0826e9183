package shedlockhttp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
)

// adminStore is a lock table in memory with an operator's view: Admin, and
// FireLocker's LastFire. The handler's tests need no database: what the
// stores themselves do is tested in their own modules.
type adminStore struct {
	mu     sync.Mutex
	rows   map[string]shedlock.LockInfo
	fires  map[string]time.Time
	failed error // returned by Locks when set
}

func newAdminStore() *adminStore {
	return &adminStore{rows: map[string]shedlock.LockInfo{}, fires: map[string]time.Time{}}
}

// hold writes name as held by holder for d (d <= 0: released).
func (s *adminStore) hold(name, holder string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := s.rows[name]
	r.Name, r.LockedBy, r.LockedAt, r.LockUntil = name, holder, now, now.Add(d)
	s.rows[name] = r
}

func (s *adminStore) view(r shedlock.LockInfo, now time.Time) shedlock.LockInfo {
	r.Held = r.LockUntil.After(now)
	r.TimeLeft = 0
	if r.Held {
		r.TimeLeft = r.LockUntil.Sub(now)
	}
	if r.Paused && !r.PausedUntil.IsZero() && !r.PausedUntil.After(now) {
		r.Paused, r.PausedUntil = false, time.Time{}
	}
	return r
}

func (s *adminStore) Locks(context.Context) ([]shedlock.LockInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return nil, s.failed
	}
	now := time.Now()
	out := make([]shedlock.LockInfo, 0, len(s.rows))
	for _, r := range s.rows {
		out = append(out, s.view(r, now))
	}
	slices.SortFunc(out, func(a, b shedlock.LockInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *adminStore) Inspect(_ context.Context, name string) (shedlock.LockInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[name]
	if !ok {
		return r, shedlock.ErrLockNotFound
	}
	return s.view(r, time.Now()), nil
}

func (s *adminStore) ForceUnlock(ctx context.Context, name string) (shedlock.LockInfo, error) {
	was, err := s.Inspect(ctx, name)
	if err != nil {
		return was, err
	}
	return s.ForceUnlockSeen(ctx, was)
}

func (s *adminStore) ForceUnlockSeen(_ context.Context, seen shedlock.LockInfo) (shedlock.LockInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[seen.Name]
	switch {
	case !ok:
		return r, shedlock.ErrLockNotFound
	case r.LockedBy != seen.LockedBy || !r.LockedAt.Equal(seen.LockedAt):
		return r, fmt.Errorf("%w: held by %s now", shedlock.ErrLockChanged, r.LockedBy)
	}
	was := s.view(r, time.Now())
	r.LockedBy, r.LockUntil = shedlock.ForceUnlockedBy, time.Now().UTC()
	s.rows[seen.Name] = r
	return was, nil
}

func (s *adminStore) HealthCheck(context.Context) error { return nil }
func (s *adminStore) EnsureTable(context.Context) error { return nil }

func (s *adminStore) LastFire(_ context.Context, name string) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.fires[name]
	return t, ok, nil
}

func (s *adminStore) TryLockFire(context.Context, shedlock.LockConfig, time.Time) (shedlock.FireLock, error) {
	return nil, shedlock.ErrNotAcquired
}

func (s *adminStore) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	return nil, shedlock.ErrNotAcquired
}

// controlStore adds shedlock.Controller, as the stores that keep a pause
// beside each lock do.
type controlStore struct{ *adminStore }

func newControlStore() controlStore { return controlStore{newAdminStore()} }

func (s controlStore) Pause(_ context.Context, name string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[name]
	r.Name, r.Paused, r.PausedUntil = name, true, until
	s.rows[name] = r
	return nil
}

func (s controlStore) Resume(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rows[name]; ok {
		r.Paused, r.PausedUntil = false, time.Time{}
		s.rows[name] = r
	}
	return nil
}

func (s controlStore) RunNow(_ context.Context, name string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[name]
	r.Name = name
	r.RunRequests++
	s.rows[name] = r
	return r.RunRequests, nil
}

func (s *adminStore) control(name string) shedlock.Control {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows[name].Control
}
