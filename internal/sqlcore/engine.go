// Package sqlcore holds the lock algorithm that every SQL provider shares: insert a
// name's row once, then take it with one conditional UPDATE; release and extend only
// what this instance still holds.
package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Store runs one provider's statements. Each reports whether it changed the row
// as asked; a false from Release or Extend means the row is no longer ours. Name
// and owner hold strings, converted to interface values once per name and once
// per engine: database/sql takes arguments as []any, and each conversion of a
// string allocates.
type Store interface {
	Insert(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error)
	Update(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error)
	Release(ctx context.Context, name, owner any, leastFor time.Duration) (bool, error)
	Extend(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error)
}

// Errors are the caller's sentinels, so that this package needs not import the
// root package.
type Errors struct {
	NotAcquired   error
	LockLost      error
	ReleaseFailed error
}

// Engine is the shared state of one provider instance.
type Engine struct {
	Store   Store
	Owner   string
	Errs    Errors
	Log     *slog.Logger
	Retries int           // release attempts after the first
	Backoff time.Duration // wait before the first retry; doubled each time

	mu       sync.Mutex
	names    map[string]*nameState
	ownerArg any // Owner as an interface value; set under mu
}

// nameState is what this instance knows of one lock name. Its mutex orders this
// instance's statements on the name, so a late release of an old handle can never
// run after, and undo, a newer acquisition by the same owner.
type nameState struct {
	mu        sync.Mutex
	exists    bool      // the row is known to exist
	checkedAt time.Time // when the row was last seen to exist
	holder    uint64    // generation of the live handle; 0: none
	gen       uint64
	nameArg   any // the name as an interface value
}

func (e *Engine) state(name string) *nameState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.names == nil {
		e.names = make(map[string]*nameState)
		e.ownerArg = e.Owner
	}
	s, ok := e.names[name]
	if !ok {
		s = &nameState{nameArg: name}
		e.names[name] = s
	}
	return s
}

// TryLock makes one attempt. In steady state it is a single UPDATE. The INSERT runs
// the first time a name is seen, and again once a failed UPDATE has not seen the row
// for mostFor, so that a row deleted by hand is re-created within one mostFor.
func (e *Engine) TryLock(ctx context.Context, name string, mostFor, leastFor time.Duration) (*Handle, error) {
	s := e.state(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.exists || now.Sub(s.checkedAt) >= mostFor {
		ok, err := e.Store.Insert(ctx, s.nameArg, e.ownerArg, mostFor)
		if err != nil {
			return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
		}
		s.exists, s.checkedAt = true, now
		if ok {
			return s.grant(e, name, leastFor), nil
		}
	}
	ok, err := e.Store.Update(ctx, s.nameArg, e.ownerArg, mostFor)
	if err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
	}
	if !ok {
		return nil, e.Errs.NotAcquired
	}
	s.checkedAt = now
	return s.grant(e, name, leastFor), nil
}

func (s *nameState) grant(e *Engine, name string, leastFor time.Duration) *Handle {
	s.gen++
	s.holder = s.gen
	return &Handle{e: e, s: s, gen: s.gen, name: name, leastFor: leastFor}
}

// Handle is one acquisition.
type Handle struct {
	e        *Engine
	s        *nameState
	gen      uint64
	name     string
	leastFor time.Duration // guarded by s.mu
}

// Release gives the lock back, retrying failed attempts with backoff.
func (h *Handle) Release(ctx context.Context) error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.holder != h.gen {
		return h.e.Errs.LockLost
	}
	wait := h.e.Backoff
	var err error
	for attempt := 0; ; attempt++ {
		var ours bool
		ours, err = h.e.Store.Release(ctx, h.s.nameArg, h.e.ownerArg, h.leastFor)
		if err == nil {
			h.s.holder = 0
			if !ours {
				return h.e.Errs.LockLost
			}
			return nil
		}
		if attempt >= h.e.Retries || ctx.Err() != nil {
			break
		}
		h.e.logger().WarnContext(ctx, "shedlock: release failed, retrying",
			"lock", h.name, "attempt", attempt+1, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait *= 2
	}
	return fmt.Errorf("%w: lock %q: %w", h.e.Errs.ReleaseFailed, h.name, errors.Join(err, ctx.Err()))
}

// Extend moves the lock's end to now + mostFor while it is still ours.
func (h *Handle) Extend(ctx context.Context, mostFor, leastFor time.Duration) error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.holder != h.gen {
		return h.e.Errs.LockLost
	}
	ours, err := h.e.Store.Extend(ctx, h.s.nameArg, h.e.ownerArg, mostFor)
	if err != nil {
		return fmt.Errorf("shedlock: extend %q: %w", h.name, err)
	}
	if !ours {
		h.s.holder = 0
		return h.e.Errs.LockLost
	}
	h.leastFor = leastFor
	return nil
}

func (e *Engine) logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}
