package shedlock

import "time"

// HoldGranularity is an optional interface of a LockProvider whose store keeps
// a lock for coarser times than it is asked, such as etcd's leases of whole
// seconds with a minimum TTL. Schedule asks it, so that the hold of each run
// (its LockAtLeastFor) never outlasts the skew bound before the next fire
// time: a hold that did would make the next fire time find the lock held, and
// skip it.
//
// A store that keeps what it is asked, to the millisecond, does not implement
// it.
type HoldGranularity interface {
	// HoldGranularity returns how the store rounds a hold: a LockAtLeastFor of
	// d is kept for d rounded up to a multiple of step, and for at least min,
	// counted from the acquisition; and what is left of a
	// FireLock.UnlockSucceeded's leastFor when the lock is released is kept
	// the same way, counted from the release. step and min are > 0.
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

// granularSlack is how much earlier than asked Schedule must end a hold that
// a store with p's HoldGranularity keeps from when the lock is released: what
// is left of it is rounded up by up to one step. 0 for other providers.
func granularSlack(p LockProvider) time.Duration {
	if g, ok := p.(HoldGranularity); ok {
		step, _ := g.HoldGranularity()
		return max(step, 0)
	}
	return 0
}

// neededGap is the smallest interval between fire times for which the store
// of p, as its HoldGranularity rounds, can hold each run's lock for longer
// than the clock skew bound and still free it the bound before the next fire
// time, for a run that starts up to half a step after its fire time. 0 for a
// provider without HoldGranularity: Schedule's own rule, more than twice the
// bound, is then the whole of it.
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
	return h + skew + step/2
}
