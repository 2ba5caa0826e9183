package main

import (
	"context"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock"
)

// coldResult is one pass over the cold-start names.
type coldResult struct {
	pass        string
	names       int
	elapsed     time.Duration
	p50, p99    time.Duration
	serverStmts int64
}

func (r coldResult) perName() time.Duration { return r.elapsed / time.Duration(r.names) }

// coldStart runs one provider over n names it has never seen, serially, twice:
// the first pass inserts each row (INSERT, then the release), the second finds
// them (UPDATE, then the release), as a restarted service does.
func coldStart(ctx context.Context, t *target, n int, mostFor time.Duration) ([]coldResult, error) {
	p, err := t.newPod(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cold-%06d", i)
	}
	var out []coldResult
	for _, pass := range []string{"first (INSERT)", "second (UPDATE)"} {
		before, err := readStatements(ctx, t)
		if err != nil {
			return nil, err
		}
		lat := make([]time.Duration, 0, n)
		start := time.Now()
		for _, name := range names {
			t0 := time.Now()
			l, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: mostFor})
			lat = append(lat, time.Since(t0))
			if err != nil {
				return nil, fmt.Errorf("cold start, %s pass, %q: %w", pass, name, err)
			}
			if err := l.Unlock(ctx); err != nil {
				return nil, fmt.Errorf("cold start, %s pass, %q: %w", pass, name, err)
			}
		}
		r := coldResult{pass: pass, names: n, elapsed: time.Since(start), serverStmts: -1}
		if after, err := readStatements(ctx, t); err != nil {
			return nil, err
		} else if after >= 0 {
			r.serverStmts = after - before - 1
		}
		r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
		out = append(out, r)
	}
	return out, nil
}
