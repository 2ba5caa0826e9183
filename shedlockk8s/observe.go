package shedlockk8s

import (
	"sync"
	"time"
)

// observations are the versions of Leases this provider has seen, each with
// when it first saw it, on this process's monotonic clock. They are the whole
// of its notion of time: a version is free once the provider has seen it
// unchanged for its hold, as client-go's leader election times a record. The
// writer's timestamps in the Lease are never compared.
type observations struct {
	mu sync.Mutex
	m  map[string]observation // by Lease name: the last version seen
}

type observation struct {
	rv string    // the version's resourceVersion
	at time.Time // when it was first seen (or sent, for the provider's own write)
}

// seen records that version rv of Lease name was read in an answer that came
// at now, and returns when the provider first saw that version: now, unless
// it had seen it before.
func (o *observations) seen(name, rv string, now time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ob, ok := o.m[name]; ok && ob.rv == rv {
		return ob.at
	}
	o.set(name, observation{rv: rv, at: now})
	return now
}

// wrote records version rv of Lease name as written by this provider, with a
// request sent at sent: it counts from then, for the hold it asked began no
// earlier (the holder's own view of its lock counts from then too).
func (o *observations) wrote(name, rv string, sent time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.set(name, observation{rv: rv, at: sent})
}

func (o *observations) set(name string, ob observation) {
	if o.m == nil {
		o.m = map[string]observation{}
	}
	o.m[name] = ob
}

// free reports whether the version of Lease name with rv and hold, read in
// an answer that came at now, is free for this provider to take.
func (o *observations) free(name, rv string, hold time.Duration, now time.Time) bool {
	first := o.seen(name, rv, now)
	return hold <= 0 || now.Sub(first) >= hold
}
