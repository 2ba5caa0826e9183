package shedlock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
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

// notStartedWarnAfter is how long fixed-delay loops may wait for Start before
// a warning says they have not run. Services call Start right after
// registering; a minute leaves room for a slow startup between the two.
const notStartedWarnAfter = time.Minute

// fixedDelays is an executor's fixed-delay loops, with their own lock: they
// wait for Start, run until Stop, and are warned of once when registered and
// not started in time.
type fixedDelays struct {
	mu         sync.Mutex
	started    bool
	stopped    bool
	loops      []*fixedDelayLoop
	notStarted *time.Timer // warns of loops not started; nil until the first loop
	log        *slog.Logger
}

// add keeps l, and starts it at once (start) if Start has been called; else
// it arms the warning, to fire after warnAfter. ErrStopped after Stop.
func (d *fixedDelays) add(l *fixedDelayLoop, start func(*fixedDelayLoop), warnAfter time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return fmt.Errorf("%w: lock %q: registered after Stop", ErrStopped, l.cfg.Name)
	}
	d.loops = append(d.loops, l)
	if d.started {
		start(l)
	} else if d.notStarted == nil {
		d.notStarted = time.AfterFunc(warnAfter, func() { d.warnNotStarted(warnAfter) })
	}
	return nil
}

// startAll starts every loop kept, once, unless stopped.
func (d *fixedDelays) startAll(start func(*fixedDelayLoop)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.stopped {
		return
	}
	d.started = true
	d.stopNotStartedLocked()
	for _, l := range d.loops {
		start(l)
	}
}

// stop refuses loops added after, and reports those that never ran because
// Start was never called, wrapping ErrNotStarted.
func (d *fixedDelays) stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	d.stopNotStartedLocked()
	if d.started || len(d.loops) == 0 {
		return nil
	}
	return fmt.Errorf("%w: fixed-delay jobs %q never ran: call Start after registering them", ErrNotStarted, d.namesLocked())
}

// warnNotStarted logs, once, the fixed-delay loops that have not started:
// without Start they never run, and nothing else would say so before Stop.
func (d *fixedDelays) warnNotStarted(after time.Duration) {
	d.mu.Lock()
	if d.started || d.stopped {
		d.mu.Unlock()
		return
	}
	names := d.namesLocked()
	d.mu.Unlock()
	d.log.Warn("shedlock: fixed-delay jobs registered but never started: they run only after Executor.Start",
		"jobs", names, "registered_for", after)
}

func (d *fixedDelays) namesLocked() []string {
	names := make([]string, len(d.loops))
	for i, l := range d.loops {
		names[i] = l.cfg.Name
	}
	return names
}

// stopNotStartedLocked cancels the warning: Start or Stop was called.
func (d *fixedDelays) stopNotStartedLocked() {
	if d.notStarted != nil {
		d.notStarted.Stop()
	}
}
