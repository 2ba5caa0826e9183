package shedlocktest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// MemoryStore is a lock table in memory, for tests of code that uses shedlock
// within one process. It keeps the same promises as the SQL providers (it passes
// Run), fencing tokens included, but it is no lock between processes.
type MemoryStore struct {
	mu    sync.Mutex
	rows  map[string]memoryRow
	fired map[string]time.Time // CatchUp's record: the last fire time that succeeded, by name
	terms uint64
	memoryControl
}

type memoryRow struct {
	until, lockedAt time.Time
	owner           string
	term            uint64 // 0 once released or freed
	taken           uint64 // the acquisition's term, kept after its release
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{rows: make(map[string]memoryRow), fired: make(map[string]time.Time),
		memoryControl: newMemoryControl()}
}

// Provider returns a provider on s that writes owner as the holder. It is a
// shedlock.FireLocker too, for CatchUp jobs, and a shedlock.Controller, a
// shedlock.RunRequester and a shedlock.Admin, for an operator's pause,
// resume and run-now.
func (s *MemoryStore) Provider(owner string) shedlock.LockProvider {
	return memoryProvider{s: s, owner: owner}
}

// FaultyProvider is Provider with every write to s (the acquisition of a
// TryLock, an Extend, an Unlock) passed through f, for RunUnknownOutcomes.
func (s *MemoryStore) FaultyProvider(owner string, f *Faults) shedlock.LockProvider {
	return memoryProvider{s: s, owner: owner, f: f}
}

type memoryProvider struct {
	s     *MemoryStore
	owner string
	f     *Faults // nil: no faults
}

// write runs one write to the store, through f where there is one.
func write(ctx context.Context, f *Faults, call func() error) error {
	if f == nil {
		return call()
	}
	return f.Do(ctx, func(context.Context) error { return call() })
}

func (p memoryProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return p.TryLockChecked(ctx, cfg, lockcfg.Checked{})
}

// TryLockChecked is TryLock on a config the executor has validated
// (lockcfg.Checked, which only this repository's modules can name).
func (p memoryProvider) TryLockChecked(ctx context.Context, cfg shedlock.LockConfig, _ lockcfg.Checked) (shedlock.Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var l *memoryLock
	err := write(ctx, p.f, func() error {
		s := p.s
		s.mu.Lock()
		defer s.mu.Unlock()
		now := time.Now()
		if s.pausedAt(cfg.Name, now) {
			return shedlock.ErrPaused
		}
		if r, ok := s.rows[cfg.Name]; ok && r.until.After(now) {
			return shedlock.ErrNotAcquired
		}
		s.terms++
		s.rows[cfg.Name] = memoryRow{until: now.Add(cfg.LockAtMostFor), lockedAt: now, owner: p.owner, term: s.terms, taken: s.terms}
		l = &memoryLock{s: s, f: p.f, name: cfg.Name, term: s.terms, least: cfg.LockAtLeastFor}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

type memoryLock struct {
	s     *MemoryStore
	f     *Faults
	name  string
	term  uint64
	least time.Duration
}

// Fence returns the acquisition's fencing token: a count of the store's
// acquisitions, which Extend keeps.
func (l *memoryLock) Fence() (int64, bool) { return int64(l.term), true }

func (l *memoryLock) Unlock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return write(ctx, l.f, func() error {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		return l.release(l.least)
	})
}

// release frees the row while it is this term's, keeping it until least
// after it was taken; the store's mutex held.
func (l *memoryLock) release(least time.Duration) error {
	r, ok := l.s.rows[l.name]
	if !ok || r.term != l.term {
		return shedlock.ErrLockLost
	}
	r.until = time.Now()
	if least := r.lockedAt.Add(least); least.After(r.until) {
		r.until = least
	}
	r.term = 0 // released: a second Unlock finds no term of its own
	l.s.rows[l.name] = r
	return nil
}

// CheckHeld reports whether the lock is still this term's and unexpired.
func (l *memoryLock) CheckHeld() error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	r, ok := l.s.rows[l.name]
	switch {
	case !ok || r.term != l.term:
		return fmt.Errorf("%w: lock %q: released or taken", shedlock.ErrLockLost, l.name)
	case !r.until.After(time.Now()):
		return fmt.Errorf("%w: lock %q", shedlock.ErrLockExpired, l.name)
	}
	return nil
}

func (l *memoryLock) Extend(ctx context.Context, most, least time.Duration) error {
	if err := lockcfg.Durations(l.name, most, least); err != nil { // the name was checked by TryLock
		return err
	}
	return l.ExtendChecked(ctx, most, least, lockcfg.Checked{})
}

// ExtendChecked is Extend on durations the executor has checked
// (lockcfg.Checked, which only this repository's modules can name).
func (l *memoryLock) ExtendChecked(ctx context.Context, most, least time.Duration, _ lockcfg.Checked) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return write(ctx, l.f, func() error {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		now := time.Now()
		r, ok := l.s.rows[l.name]
		if !ok || r.term != l.term || !r.until.After(now) {
			return shedlock.ErrLockLost
		}
		r.until = now.Add(most)
		l.s.rows[l.name] = r
		l.least = least
		return nil
	})
}
