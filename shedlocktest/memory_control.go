package shedlocktest

import (
	"context"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock"
)

var (
	_ shedlock.Controller   = memoryProvider{}
	_ shedlock.RunRequester = memoryProvider{}
)

// memoryControl is a MemoryStore's pause and run-now state, by name, under
// the store's mutex.
type memoryControl struct {
	paused  map[string]time.Time // the end of each pause; zero: until Resume
	runs    map[string]int64     // run-now requests not yet run
	runDone map[string]uint64    // the term of the acquisition that marked a request last
}

func newMemoryControl() memoryControl {
	return memoryControl{paused: map[string]time.Time{}, runs: map[string]int64{}, runDone: map[string]uint64{}}
}

// pausedAt reports whether name is paused at now, and forgets a pause that
// has ended.
func (c memoryControl) pausedAt(name string, now time.Time) bool {
	until, ok := c.paused[name]
	if ok && !until.IsZero() && !until.After(now) {
		delete(c.paused, name)
		return false
	}
	return ok
}

// control returns name's Control at now.
func (c memoryControl) control(name string, now time.Time) shedlock.Control {
	ctl := shedlock.Control{Paused: c.pausedAt(name, now), RunRequests: c.runs[name]}
	if ctl.Paused {
		ctl.PausedUntil = c.paused[name]
	}
	return ctl
}

// validName reports a name no lock can have, as TryLock would.
func validName(name string) error {
	return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}.Validate()
}

// Pause refuses every attempt on name, by every provider of the store, with
// shedlock.ErrPaused until until (zero: until Resume). A pause that has
// already ended is an error wrapping shedlock.ErrInvalidConfig.
func (p memoryProvider) Pause(ctx context.Context, name string, until time.Time) error {
	if err := validName(name); err != nil {
		return err
	}
	if !until.IsZero() && !until.After(time.Now()) {
		return fmt.Errorf("%w: pause %q until %v: that time has passed", shedlock.ErrInvalidConfig, name, until)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	p.s.paused[name] = until.UTC()
	return nil
}

// Resume ends name's pause; a name not paused is no error.
func (p memoryProvider) Resume(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	delete(p.s.paused, name)
	return nil
}

// RunNow adds one run-now request to name and returns how many are pending.
func (p memoryProvider) RunNow(ctx context.Context, name string) (int64, error) {
	if err := validName(name); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	p.s.runs[name]++
	return p.s.runs[name], nil
}

// RunRequests returns the pending run-now requests of those of names that
// have any.
func (p memoryProvider) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	out := make(map[string]int64)
	for _, name := range names {
		if n := p.s.runs[name]; n > 0 {
			out[name] = n
		}
	}
	return out, nil
}

// RunDone marks one of name's requests run, if one is left, while held (a
// lock of this store) still holds name's lock; shedlock.ErrLockLost, and
// nothing marked, when it does not. One acquisition marks at most one
// request: a RunDone sent again for the same run marks nothing more.
func (p memoryProvider) RunDone(ctx context.Context, name string, held shedlock.Lock) error {
	l, err := p.ownLock(name, held)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rows[name]; !ok || r.term != l.term || !r.until.After(time.Now()) {
		return fmt.Errorf("%w: run of %q: its lock is no longer held", shedlock.ErrLockLost, name)
	}
	if s.runDone[name] == l.term || s.runs[name] == 0 {
		return nil
	}
	s.runDone[name] = l.term
	if s.runs[name]--; s.runs[name] == 0 {
		delete(s.runs, name)
	}
	return nil
}

// ownLock returns held as a lock of p's store on name.
func (p memoryProvider) ownLock(name string, held shedlock.Lock) (*memoryLock, error) {
	var l *memoryLock
	switch h := held.(type) {
	case *memoryLock:
		l = h
	case *memoryFireLock:
		if h != nil {
			l = &h.memoryLock
		}
	}
	switch {
	case l == nil || l.s != p.s:
		return nil, fmt.Errorf("%w: run of %q: %T is not a lock of this store", shedlock.ErrInvalidConfig, name, held)
	case l.name != name:
		return nil, fmt.Errorf("%w: run of %q: the lock passed is %q's", shedlock.ErrInvalidConfig, name, l.name)
	}
	return l, nil
}
