package shedlock

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"
)

// A herd is many jobs firing at one tick on many pods, draining at the store's
// pace. An attempt gives up once its fire time's window has passed (no tick
// runs twice); a pod keeps its attempts within its pool and sends those that
// queue together (in_flight.go), and its releases and extensions never wait
// for them.

type fireTimeKey struct{}

// ContextWithFireTime returns ctx carrying fire, the time the run is due: the
// cron tick it belongs to. Run (and WithLock and Wrap jobs, which are given the
// time cron called them) then gives up an attempt made more than half of
// LockAtLeastFor after fire, skipping the run (SkipLate, and (false, nil)).
// Without a fire time, or with the zero time, Run takes the moment it was
// called as the fire time. A fire time so old that the attempt is late at once
// is logged at warn level, once per name.
//
// Why: an instance that takes the lock at a tick holds it for at least
// LockAtLeastFor. A later attempt, from a pod whose herd of jobs took that
// long to drain, could take the lock after that tick's run released it, and
// run the tick twice. The window is half of LockAtLeastFor after fire; the
// other half covers instances whose clocks are apart, and the time a statement
// waits in the store. With LockAtLeastFor 0 there is no window: the lock alone
// decides, as without a fire time.
//
// The limit: a job is skipped at a tick if no instance reaches it within the
// window. Each pod sends the attempts that queue at it together, hundreds to a
// statement where the provider can (BatchLocker), its last winners' first
// (see WithMaxInFlight), so that a pod's whole herd is tried within a few
// round trips.
func ContextWithFireTime(ctx context.Context, fire time.Time) context.Context {
	return context.WithValue(ctx, fireTimeKey{}, fire)
}

// FireTimeFromContext returns the fire time ContextWithFireTime put in ctx.
//
// The executor puts one in each task's context. A job added with Schedule
// gets its scheduled fire time, the same on every instance (a cron spec's
// time, in c's location), with CatchUp or without; for CatchUp, a catch-up
// run gets the fire time it stands for. An @every spec's fire times are each
// instance's own (a cron.ConstantDelaySchedule, as cron's parsers give for it):
// its job gets the time cron called it. A WithLock or Wrap
// job gets the time cron called it (the executor does not know its spec),
// and Run the caller's fire time, if any.
func FireTimeFromContext(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(fireTimeKey{}).(time.Time)
	return t, ok
}

// windowEnd is when an attempt of cfg made at called, in ctx, becomes late;
// zero when it cannot: with LockAtLeastFor 0 the lock alone decides. Without
// a fire time in ctx, or with the zero time, called stands for it: a run that
// waited in the executor's queue past the window gives up rather than take a
// lock whose tick another instance already ran.
func windowEnd(ctx context.Context, cfg LockConfig, called time.Time) time.Time {
	if cfg.LockAtLeastFor <= 0 {
		return time.Time{}
	}
	fire, ok := FireTimeFromContext(ctx)
	if !ok || fire.IsZero() {
		fire = called
	}
	return fire.Add(cfg.LockAtLeastFor / 2)
}

// fireTimeOf is the fire time of a Schedule'd job's run that cron called at
// now, on schedule s: the latest of its spec's fire times, which is the one cron fired (cron
// calls a job once its time has come), the same on every instance. An @every
// spec has no shared fire times, and its Next counts from the time given: now
// stands for it.
func fireTimeOf(s cron.Schedule, now time.Time) time.Time {
	if s == nil {
		return now
	}
	if _, every := s.(cron.ConstantDelaySchedule); every {
		return now
	}
	if fire := latestFire(s.Next, now, checkHorizon); !fire.IsZero() {
		return fire
	}
	return now
}

// granularHold returns the largest hold of at most avail that the store of p
// keeps for no longer than avail, as p's HoldGranularity rounds it; 0 when
// even the store's shortest hold is longer than avail. For a provider without
// HoldGranularity it is avail, truncated to the millisecond.
func granularHold(p LockProvider, avail time.Duration) time.Duration {
	g, ok := p.(HoldGranularity)
	if !ok {
		return max(avail.Truncate(time.Millisecond), 0)
	}
	step, least := g.HoldGranularity()
	if step <= 0 {
		step = time.Millisecond
	}
	h := avail.Truncate(step)
	if h <= 0 || h < least {
		return 0
	}
	return h
}

// neededGap is the smallest interval between fire times for which the store
// of p, as its HoldGranularity rounds, can hold each run's lock for longer
// than the clock skew bound and still free it the bound before the next fire
// time, for a run that starts up to the bound, or half a step, after its fire
// time: one later than the bound finds every instance within the bound has
// fired already. 0 for a provider without HoldGranularity: Schedule's own
// rule, more than twice the bound, is then the whole of it.
func neededGap(p LockProvider, skew time.Duration) time.Duration {
	g, ok := p.(HoldGranularity)
	if !ok {
		return 0
	}
	step, least := g.HoldGranularity()
	if step <= 0 {
		step = time.Millisecond
	}
	h := max(least, skew+1) // longer than the bound, and kept no longer than asked
	if r := h % step; r != 0 {
		h += step - r
	}
	return h + skew + max(step/2, skew)
}

// checkHorizon bounds how far back the checker looks for a fire time past its
// window, to tell whether it was missed.
const checkHorizon = 366 * 24 * time.Hour

// latestFire returns the latest fire time of next at or before now and after
// now - horizon; zero when there is none. next is a cron schedule's Next, which
// only goes forward: the search steps back from now, doubling, until a fire
// time lies between, then walks forward to the last one.
func latestFire(next func(time.Time) time.Time, now time.Time, horizon time.Duration) time.Time {
	const maxWalk = 100_000 // fire times walked at most; a cron spec fires at most once a second
	for step := time.Second; ; step *= 2 {
		step = min(step, horizon)
		t := next(now.Add(-step))
		if !t.IsZero() && !t.After(now) {
			for range maxWalk {
				n := next(t)
				if n.IsZero() || n.After(now) {
					break
				}
				t = n
			}
			return t
		}
		if step >= horizon {
			return time.Time{}
		}
	}
}
