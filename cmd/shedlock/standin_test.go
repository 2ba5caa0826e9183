package main

import (
	"context"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
)

// standIn keeps pauses and run-nows in the test's memory for a store that
// does not implement shedlock.Controller yet, so that the commands that
// steer jobs are tested on every store before each store keeps them itself.
// A store that is a Controller is used as it is: the tests then run on the
// store's own pauses. Delete this once every store is one.
type standIn struct {
	mu sync.Mutex
	m  map[string]shedlock.Control
}

func newStandIn() *standIn { return &standIn{m: map[string]shedlock.Control{}} }

// opener opens the store as the command does, behind the stand-in where the
// store has no Controller.
func (s *standIn) opener() func(context.Context, config, bool) (*store, error) {
	return func(ctx context.Context, c config, create bool) (*store, error) {
		st, err := openStore(ctx, c, create)
		if err != nil {
			return nil, err
		}
		if _, ok := st.Admin.(shedlock.Controller); !ok {
			st.Admin = standInAdmin{st.Admin, s}
		}
		return st, nil
	}
}

type standInAdmin struct {
	shedlock.Admin
	s *standIn
}

func (a standInAdmin) control(name string) shedlock.Control {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	c := a.s.m[name]
	if c.Paused && !c.PausedUntil.IsZero() && !c.PausedUntil.After(time.Now()) {
		c.Paused, c.PausedUntil = false, time.Time{}
	}
	return c
}

func (a standInAdmin) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	locks, err := a.Admin.Locks(ctx)
	for i := range locks {
		locks[i].Control = a.control(locks[i].Name)
	}
	return locks, err
}

func (a standInAdmin) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	l, err := a.Admin.Inspect(ctx, name)
	l.Control = a.control(name)
	return l, err
}

func (a standInAdmin) Pause(_ context.Context, name string, until time.Time) error {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	c := a.s.m[name]
	c.Paused, c.PausedUntil = true, until
	a.s.m[name] = c
	return nil
}

func (a standInAdmin) Resume(_ context.Context, name string) error {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	c := a.s.m[name]
	c.Paused, c.PausedUntil = false, time.Time{}
	a.s.m[name] = c
	return nil
}

func (a standInAdmin) RunNow(_ context.Context, name string) (int64, error) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	c := a.s.m[name]
	c.RunRequests++
	a.s.m[name] = c
	return c.RunRequests, nil
}
