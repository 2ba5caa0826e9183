package shedlock

import "time"

// HoldGranularity is an optional interface of a LockProvider whose store keeps
// a lock for coarser times than it is asked, such as etcd's leases of whole
// seconds with a minimum TTL. Schedule asks it, so that the hold of each run
// never outlasts the skew bound before the next fire time: a hold that did
// would make the next fire time find the lock held, and skip it (or, with
// CatchUp, run it late, at a retry).
//
// A store that keeps what it is asked, to the millisecond, does not implement
// it.
type HoldGranularity interface {
	// HoldGranularity returns how the store rounds a hold, step and min both
	// > 0. A LockAtLeastFor of d is kept for d rounded up to a multiple of
	// step, and at least min, counted from the acquisition: Schedule asks for
	// the largest multiple of step that ends no later than the skew bound
	// before the next fire time, skips a run as late when that is below min,
	// and refuses a spec whose fire times are too close for one. Schedule
	// asks before it accepts a spec and at every run: min must be the
	// store's by then (a store may ask it at the first call, within a bound). What is left of a
	// FireLock.UnlockSucceeded's leastFor when the lock is released must be
	// kept rounded down to a multiple of step instead, and not at all when
	// that is below min: the store cannot know when the run ends, and the
	// record of the fire time, not the hold, keeps it to one run.
	HoldGranularity() (step, min time.Duration)
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
