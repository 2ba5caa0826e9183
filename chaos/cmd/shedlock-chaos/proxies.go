package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shedlock-go/shedlock/chaos"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
)

// proxies puts a fault proxy between each pod and the lock store, for the
// locks' connections (the journal's, and the reading of a lock's time left, go
// direct, so that what the journal records is not lost).
type proxies struct {
	by   map[string]*faultproxy.Proxy
	dsns map[string]string
}

func startProxies(store chaos.Store, dsn string, pods int) (*proxies, error) {
	addr, err := store.Addr(dsn)
	if err != nil {
		return nil, err
	}
	ps := &proxies{by: map[string]*faultproxy.Proxy{}, dsns: map[string]string{}}
	for i := range pods {
		pod := fmt.Sprintf("pod-%d", i)
		p, err := faultproxy.Start(addr)
		if err != nil {
			ps.close()
			return nil, err
		}
		ps.by[pod] = p
		if ps.dsns[pod], err = store.Via(dsn, p.Addr()); err != nil {
			ps.close()
			return nil, err
		}
	}
	return ps, nil
}

// dsn is how pod reaches the store through its proxy.
func (ps *proxies) dsn(pod string) string { return ps.dsns[pod] }

// fault puts one random fault on pod's connections.
func (ps *proxies) fault(ctx context.Context, pod string) (string, error) {
	p := ps.by[pod]
	hold := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	switch rand.N(4) {
	case 0:
		return fmt.Sprintf("reset %d connections", p.ResetAll()), nil
	case 1:
		p.SetDown(true)
		hold(2 * time.Second)
		p.SetDown(false)
		return "store unreachable for 2s", nil
	case 2:
		p.SetLatency(100 * time.Millisecond)
		hold(3 * time.Second)
		p.SetLatency(0)
		return "100ms latency for 3s", nil
	default:
		forward := rand.N(2) == 0
		fired := p.ResetOnNextRequest(forward)
		select {
		case <-fired:
		case <-time.After(5 * time.Second):
			if p.Disarm() {
				// Left armed, it would fire later, outside the span the event records.
				return "reset on next request (did not fire; disarmed)", nil
			}
			// Taken by a request just now: its response is on the way, unless the
			// connection died first (the request's read timeout is 3s).
			select {
			case <-fired:
			case <-time.After(5 * time.Second):
				return "reset on next request (taken, response never came)", nil
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if forward {
			return "next request run, its response lost", nil
		}
		return "next request lost", nil
	}
}

func (ps *proxies) close() {
	for _, p := range ps.by {
		_ = p.Close()
	}
}
