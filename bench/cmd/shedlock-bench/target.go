package main

import (
	"context"
	"errors"

	"github.com/shedlock-go/shedlock"
)

// target is one store under test: how to make a pod, the floor cycle to compare
// with, and, where the server keeps one, its count of statements.
type target struct {
	label string
	// newPod returns a provider on a pool of its own, as a pod of a service has.
	newPod func(ctx context.Context) (shedlock.LockProvider, error)
	// floor runs one bare cycle: the acquiring and the releasing statement, sent
	// directly on one pool.
	floor func(ctx context.Context) error
	// statements reads the server's count of statements received so far; nil
	// when the store has no server.
	statements func(ctx context.Context) (int64, error)
	closers    []func() error
}

func (t *target) onClose(f func() error) { t.closers = append(t.closers, f) }

// close runs the closers in reverse order.
func (t *target) close() error {
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		errs = append(errs, t.closers[i]())
	}
	return errors.Join(errs...)
}
