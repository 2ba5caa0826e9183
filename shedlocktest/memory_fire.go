package shedlocktest

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock"
)

var _ shedlock.FireLocker = memoryProvider{}

// TryLockFire takes the lock as TryLock does, only if the fire time recorded
// for the name is older than fire, or none is.
func (p memoryProvider) TryLockFire(ctx context.Context, cfg shedlock.LockConfig, fire time.Time) (shedlock.FireLock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fire = fire.Truncate(time.Millisecond)
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.pausedAt(cfg.Name, now) {
		return nil, shedlock.ErrPaused
	}
	if r, ok := s.rows[cfg.Name]; ok && r.until.After(now) {
		return nil, shedlock.ErrNotAcquired
	}
	if last, ok := s.fired[cfg.Name]; ok && !last.Before(fire) {
		return nil, shedlock.ErrNotAcquired
	}
	s.terms++
	s.rows[cfg.Name] = memoryRow{until: now.Add(cfg.LockAtMostFor), lockedAt: now, owner: p.owner, term: s.terms, taken: s.terms}
	return &memoryFireLock{memoryLock{s: s, name: cfg.Name, term: s.terms}, fire}, nil
}

// LastFire returns the fire time recorded for name.
func (p memoryProvider) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	t, ok := p.s.fired[name]
	return t, ok, nil
}

type memoryFireLock struct {
	memoryLock
	fire time.Time
}

// UnlockSucceeded releases the lock, held until leastFor after it was taken,
// and records its fire time unless a later one is.
func (l *memoryFireLock) UnlockSucceeded(ctx context.Context, leastFor time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if err := l.release(leastFor); err != nil {
		return err
	}
	if last, ok := l.s.fired[l.name]; !ok || last.Before(l.fire) {
		l.s.fired[l.name] = l.fire
	}
	return nil
}
