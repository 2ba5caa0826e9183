package sqlstore

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Gate runs a store's first-use setup until it succeeds, one caller at a time;
// a caller stops waiting, for another's setup or its own, when its ctx ends.
type Gate[T any] struct {
	turn  chan struct{}
	done  atomic.Pointer[T]
	setup func(context.Context) (*T, error)
}

// NewGate returns a gate that runs setup.
func NewGate[T any](setup func(context.Context) (*T, error)) *Gate[T] {
	return &Gate[T]{turn: make(chan struct{}, 1), setup: setup}
}

// Get returns what setup made, running it first if no call has succeeded yet.
func (g *Gate[T]) Get(ctx context.Context) (*T, error) {
	if v := g.done.Load(); v != nil {
		return v, nil
	}
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("shedlock: wait for the provider's first-use setup: %w", context.Cause(ctx))
	}
	if v := g.done.Load(); v != nil {
		<-g.turn
		return v, nil
	}
	// The setup runs in a goroutine of its own, which keeps the turn until it
	// ends: a caller whose ctx ends stops waiting for a setup hung on a dead
	// connection (see bounded), and later callers wait for the turn within
	// their own ctx.
	return bounded(ctx, func(ctx context.Context) (*T, error) {
		defer func() { <-g.turn }()
		v, err := g.setup(ctx)
		if err == nil {
			g.done.Store(v)
		}
		return v, err
	})
}

// Ready runs the setup, if no call has succeeded yet: a store's first-use
// checks, once they pass.
func (g *Gate[T]) Ready(ctx context.Context) error {
	_, err := g.Get(ctx)
	return err
}

// Reset forgets what setup made, after closing it; the next Get sets up again.
func (g *Gate[T]) Reset(closeFn func(*T) error) error {
	g.turn <- struct{}{}
	defer func() { <-g.turn }()
	if v := g.done.Swap(nil); v != nil {
		return closeFn(v)
	}
	return nil
}
