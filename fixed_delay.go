package shedlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// fixedDelayLoop runs a task, waits delay after it ends, and runs it again.
type fixedDelayLoop struct {
	cfg   LockConfig
	delay time.Duration
	task  func(context.Context) error
	opts  jobOptions
	next  atomic.Int64 // when the next run is due, in Unix nanoseconds; 0 before Start
}

// FixedDelay registers a task to run under cfg's lock in a loop: run, wait delay
// after it finishes (or after the lock was found taken), run again. This is
// Spring's fixedDelay, which robfig/cron lacks. Loops start with Start, or at once
// if the executor has started; they end with Stop. If Start is never called the
// task never runs: a warning is logged once when loops registered a minute ago
// have still not started, and Stop returns ErrNotStarted.
//
// It returns ErrInvalidConfig for a config that fails Validate or that the
// provider would refuse on every run (see ConfigChecker), ErrInvalidJob for a nil
// task or a delay that is not > 0, ErrDuplicateName for a name already registered
// on this executor (names differing only by case, accents, emoji or trailing spaces are one
// name), and ErrStopped after Stop.
//
// Job options (KeepAlive) apply to every run; a nil one is ErrInvalidOption.
//
// Each run has a goroutine of its own, as each cron run does: a task that calls
// runtime.Goexit ends that run (its lock is released and the Goexit logged), and
// the loop goes on.
func (e *Executor) FixedDelay(cfg LockConfig, delay time.Duration, task func(ctx context.Context) error, opts ...JobOption) error {
	storeKey, err := e.checkJob(cfg)
	if err != nil {
		return err
	}
	o, err := e.plainJobOptions(cfg.Name, "FixedDelay", opts)
	if err != nil {
		return err
	}
	if task == nil {
		return fmt.Errorf("%w: lock %q: FixedDelay: nil task", ErrInvalidJob, cfg.Name)
	}
	if delay <= 0 {
		return fmt.Errorf("%w: lock %q: FixedDelay needs a delay > 0, got %v", ErrInvalidJob, cfg.Name, delay)
	}
	l := &fixedDelayLoop{cfg: cfg, delay: delay, task: task, opts: o}
	if err := e.reg.register(cfg.Name, storeKey); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped { // Stop came after the name was registered
		e.reg.unregister(cfg.Name)
		return fmt.Errorf("%w: lock %q: registered after Stop", ErrStopped, cfg.Name)
	}
	e.reg.recordLoop(cfg.Name, l)
	e.loops = append(e.loops, l)
	if e.started {
		e.startLocked(l)
	} else if e.notStarted == nil {
		e.notStarted = time.AfterFunc(e.notStartedAfter, e.warnNotStarted)
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
	e.stopNotStartedLocked()
	for _, l := range e.loops {
		e.startLocked(l)
	}
}

// checkJob reports why a job under cfg cannot be registered: a bad executor or
// a config the provider would refuse; else it returns the provider's NameKey
// of the name (see storeKey).
func (e *Executor) checkJob(cfg LockConfig) (string, error) {
	if e.err != nil {
		return "", e.err
	}
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if c, ok := e.provider.(ConfigChecker); ok {
		if err := c.CheckConfig(cfg); err != nil {
			return "", err
		}
	}
	return e.storeKey(cfg.Name)
}

// startLocked starts l's loop. e.mu must be held, and the executor not stopped.
func (e *Executor) startLocked(l *fixedDelayLoop) {
	e.live++
	go func() {
		defer e.endLive()
		for {
			l.next.Store(time.Now().UnixNano())
			e.runOnce(l)
			l.next.Store(time.Now().Add(l.delay).UnixNano())
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

// runOnce runs l's task once, in a goroutine of its own so that a runtime.Goexit
// in the task ends only that run.
func (e *Executor) runOnce(l *fixedDelayLoop) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.run(e.base, l.cfg, l.task, l.opts) // run logs what fails
	}()
	<-done
}

// notStartedWarnAfter is how long fixed-delay loops may wait for Start before
// a warning says they have not run. Services call Start right after
// registering; a minute leaves room for a slow startup between the two.
const notStartedWarnAfter = time.Minute

// warnNotStarted logs, once, the fixed-delay loops that have not started:
// without Start they never run, and nothing else would say so before Stop.
func (e *Executor) warnNotStarted() {
	e.mu.Lock()
	if e.started || e.stopped {
		e.mu.Unlock()
		return
	}
	names := make([]string, len(e.loops))
	for i, l := range e.loops {
		names[i] = l.cfg.Name
	}
	e.mu.Unlock()
	e.log.Warn("shedlock: fixed-delay jobs registered but never started: they run only after Executor.Start",
		"jobs", names, "registered_for", e.notStartedAfter)
}

// stopNotStartedLocked cancels the warning: Start or Stop was called. e.mu
// must be held.
func (e *Executor) stopNotStartedLocked() {
	if e.notStarted != nil {
		e.notStarted.Stop()
	}
}
