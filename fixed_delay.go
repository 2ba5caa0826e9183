package shedlock

import (
	"context"
	"fmt"
	"time"
)

// fixedDelayLoop runs a task, waits delay after it ends, and runs it again.
type fixedDelayLoop struct {
	cfg   LockConfig
	delay time.Duration
	task  func(context.Context) error
}

// FixedDelay registers a task to run under cfg's lock in a loop: run, wait delay
// after it finishes (or after the lock was found taken), run again. This is
// Spring's fixedDelay, which robfig/cron lacks. Loops start with Start, or at once
// if the executor has started; they end with Stop. A second job under the same
// lock name on this executor is ErrDuplicateName.
func (e *Executor) FixedDelay(cfg LockConfig, delay time.Duration, task func(ctx context.Context) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if delay <= 0 || task == nil {
		return fmt.Errorf("%w: lock %q: FixedDelay needs a delay > 0 (got %v) and a task", ErrInvalidOption, cfg.Name, delay)
	}
	l := &fixedDelayLoop{cfg: cfg, delay: delay, task: task}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.registerLocked(cfg.Name); err != nil {
		return err
	}
	e.loops = append(e.loops, l)
	if e.started {
		e.startLocked(l)
	}
	return nil
}

// Start starts the registered fixed-delay loops, each running its task at once.
// Calling it again, or after Stop, does nothing.
func (e *Executor) Start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.stopped {
		return
	}
	e.started = true
	for _, l := range e.loops {
		e.startLocked(l)
	}
}

func (e *Executor) registerLocked(name string) error {
	if e.names[name] {
		return fmt.Errorf("%w: %q", ErrDuplicateName, name)
	}
	e.names[name] = true
	return nil
}

func (e *Executor) startLocked(l *fixedDelayLoop) {
	if e.stopped {
		return
	}
	e.inflight.Add(1)
	go func() {
		defer e.inflight.Done()
		for {
			_, _ = e.Run(e.base, l.cfg, l.task) // Run logs what fails
			t := time.NewTimer(l.delay)
			select {
			case <-e.base.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}
