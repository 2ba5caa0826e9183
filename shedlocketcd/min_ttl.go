package shedlocketcd

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Bounds of the probe HoldGranularity makes: how long it waits for the
// cluster, and how soon after one that failed it asks again. A Schedule'd
// run sizes its hold after it, so a cluster that does not answer costs a run
// at most probeTimeout, and then nothing for probeRetry.
const (
	probeTimeout = 3 * time.Second
	probeRetry   = 30 * time.Second
)

// probe is what the provider knows of its learning the cluster's minimum TTL.
type probe struct {
	mu     sync.Mutex
	done   bool      // a probe was answered
	failed time.Time // when the last probe went unanswered; zero if none did
}

// once probes the cluster's minimum TTL for p unless a probe was answered, or
// one failed less than probeRetry ago. Callers wait for a probe under way.
func (pr *probe) once(p *Provider) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.done || (!pr.failed.IsZero() && time.Since(pr.failed) < probeRetry) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if _, err := p.probeMinTTL(ctx); err != nil {
		pr.failed = time.Now()
		return
	}
	pr.done = true
}

// ProbeMinTTL asks the cluster for its minimum lease TTL (1.5 election
// timeouts, rounded up to the second): it grants a lease of 1s, which the
// cluster raises to its minimum and says so, and revokes it at once. It
// returns the minimum the provider uses from then on for HoldGranularity and
// UnlockSucceeded: the cluster's, and at least etcd's default of 2s.
//
// HoldGranularity probes by itself the first time it is asked, which
// shedlock.Schedule does before it accepts a spec; a service that would rather
// fail at start than have Schedule assume 2s while the cluster is unreachable
// calls ProbeMinTTL first. A grant that shows a longer minimum later (a member
// with a longer election timeout became leader) raises it again.
func (p *Provider) ProbeMinTTL(ctx context.Context) (time.Duration, error) {
	d, err := p.probeMinTTL(ctx)
	if err == nil {
		p.probe.mu.Lock()
		p.probe.done = true
		p.probe.mu.Unlock()
	}
	return d, err
}

// probeMinTTL is ProbeMinTTL, without recording that a probe was answered.
func (p *Provider) probeMinTTL(ctx context.Context) (time.Duration, error) {
	resp, err := p.client.Grant(ctx, 1)
	if err != nil {
		return p.minTTLDuration(), fmt.Errorf("shedlock: probe the minimum lease TTL: %w", err)
	}
	p.revoke(ctx, resp.ID)
	p.raiseMinTTL(resp.TTL)
	return p.minTTLDuration(), nil
}
