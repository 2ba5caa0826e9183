package shedlock

import (
	"context"

	"github.com/shedlock-go/shedlock/internal/inflight"
	"github.com/shedlock-go/shedlock/internal/jobname"
)

// The executor's marks of the runs under way in this process: which names run
// here, which it won last, which were warned of as late, and the leases that
// Stop must end.

// enter marks name's key (jobname.Key) as running here, and tells the key and
// the kind of its attempt. It refuses with ErrStopped once stopped, and with
// no error when the name already runs in this process: a run that outlived
// its lock must not be joined by a second one.
func (e *Executor) enter(name string) (key string, entered bool, kind inflight.Kind, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return "", false, 0, ErrStopped
	}
	key = e.keyLocked(name)
	if _, ok := e.running[key]; ok {
		return key, false, 0, nil
	}
	e.running[key] = name
	e.runs++
	e.live++
	if _, ok := e.wonLast[key]; ok {
		return key, true, inflight.WonLast, nil
	}
	return key, true, inflight.Attempt, nil
}

// keyLocked returns name's jobname.Key, computed once per name: every run of
// a job would otherwise fold its name again, and allocate the result. e.mu must
// be held.
func (e *Executor) keyLocked(name string) string {
	if key, ok := e.keys[name]; ok {
		return key
	}
	if len(e.keys) >= maxWonLast {
		clear(e.keys)
	}
	key := jobname.Key(name)
	e.keys[name] = key
	return key
}

// addLease makes l's context end with ErrStopped on Stop, at once if Stop has
// begun. The executor keeps the set itself rather than a context.AfterFunc per
// run: a map entry costs a run nothing once the map has grown.
func (e *Executor) addLease(l *lease) {
	e.mu.Lock()
	stopped := e.stopped
	if !stopped {
		e.leases[l] = struct{}{}
	}
	e.mu.Unlock()
	if stopped {
		l.cancel(ErrStopped)
	}
}

// leaseHooks is what a run's lease may call back: made once, in NewExecutor,
// since each method value is an allocation.
func (e *Executor) leaseHooks() *leaseHooks {
	h := &leaseHooks{log: e.log, finished: e.removeLease, extend: e.attempts.extend, clock: newLeaseClock()}
	if e.events != nil {
		h.emit = e.emit
	}
	return h
}

func (e *Executor) removeLease(l *lease) {
	e.mu.Lock()
	delete(e.leases, l)
	e.mu.Unlock()
}

// maxWonLast bounds the names remembered as won: an application that locks a
// name per entity (one per order) would otherwise grow the set for good.
const maxWonLast = 1 << 14

// leave ends key's run here. An attempt that took the lock makes the next one
// a WonLast; one that found it held elsewhere, an Attempt; any other outcome
// (late, a store error) leaves it as it was.
func (e *Executor) leave(key string, took, heldElsewhere bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case took:
		if len(e.wonLast) >= maxWonLast {
			clear(e.wonLast)
		}
		e.wonLast[key] = struct{}{}
	case heldElsewhere:
		delete(e.wonLast, key)
	}
	delete(e.running, key)
	e.runs--
	e.endLiveLocked()
}

// warnLateOnce warns, once per name, of a run whose fire time's window had
// passed before it was called: a fire time far in the past (the zero time is
// none) skips every run of the job, which at the skip level alone would go
// unseen.
func (e *Executor) warnLateOnce(ctx context.Context, key, name string) {
	e.mu.Lock()
	_, warned := e.late[key]
	if !warned {
		if len(e.late) >= maxWonLast {
			clear(e.late)
		}
		e.late[key] = struct{}{}
	}
	e.mu.Unlock()
	if !warned {
		e.log.WarnContext(ctx, "shedlock: run came after its fire time's window, so it is skipped; "+
			"is the fire time given to ContextWithFireTime the run's tick?", "lock", name)
	}
}
