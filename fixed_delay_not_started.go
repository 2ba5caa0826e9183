package shedlock

import "time"

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
