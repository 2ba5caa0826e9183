package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
)

// stepResult is one (names, pods) step.
type stepResult struct {
	names, pods int
	elapsed     time.Duration
	attempts    int
	acquired    int
	p50, p99    time.Duration
	serverStmts int64 // -1: the store has no server counter
}

func (r stepResult) attemptsPerSec() float64 { return float64(r.attempts) / r.elapsed.Seconds() }
func (r stepResult) acquiredPerSec() float64 { return float64(r.acquired) / r.elapsed.Seconds() }
func (r stepResult) serverPerSec() float64   { return float64(r.serverStmts) / r.elapsed.Seconds() }

// runStep lets pods compete for names for d. Each pod is one goroutine that
// loops as fast as its round trips allow, walking the names from an offset of
// its own: TryLock, and on success Unlock at once (LockAtLeastFor 0), as a job
// that found nothing to do would.
func runStep(ctx context.Context, t *target, pods []shedlock.LockProvider, names []string, mostFor, d time.Duration) (stepResult, error) {
	r := stepResult{names: len(names), pods: len(pods), serverStmts: -1}
	before, err := readStatements(ctx, t)
	if err != nil {
		return r, err
	}
	lat := make([]latencies, len(pods))
	acq := make([]int, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i, p := range pods {
		wg.Go(func() {
			k := i * len(names) / len(pods)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				cfg := shedlock.LockConfig{Name: names[k%len(names)], LockAtMostFor: mostFor}
				k++
				t0 := time.Now()
				l, err := p.TryLock(ctx, cfg)
				lat[i] = append(lat[i], time.Since(t0))
				if errors.Is(err, shedlock.ErrNotAcquired) {
					continue
				}
				if err != nil {
					errs[i] = err
					return
				}
				acq[i]++
				if err := l.Unlock(ctx); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("%d names, %d pods: %w", len(names), len(pods), err)
	}
	if after, err := readStatements(ctx, t); err != nil {
		return r, err
	} else if after >= 0 {
		r.serverStmts = after - before - 1 // less the read of the counter itself
	}
	var all []time.Duration
	for i := range pods {
		all = append(all, lat[i]...)
		r.acquired += acq[i]
	}
	r.attempts = len(all)
	r.p50, r.p99 = quantile(all, 0.50), quantile(all, 0.99)
	return r, nil
}

// readStatements returns the server's statement count, or -1 without a server.
func readStatements(ctx context.Context, t *target) (int64, error) {
	if t.statements == nil {
		return -1, nil
	}
	n, err := t.statements(ctx)
	if err != nil {
		return 0, fmt.Errorf("read server status: %w", err)
	}
	return n, nil
}

// warmUp makes every pod learn that each name's row exists, as a service in
// steady state knows it: a holder takes all names, every pod tries each once
// (and fails, so that nothing it does is counted as an acquisition), and the
// holder lets go. Without it the first pass of each pod would be INSERTs.
func warmUp(ctx context.Context, holder shedlock.LockProvider, pods []shedlock.LockProvider, names []string, mostFor time.Duration) error {
	held := make([]shedlock.Lock, 0, len(names))
	for _, n := range names {
		l, err := holder.TryLock(ctx, shedlock.LockConfig{Name: n, LockAtMostFor: mostFor})
		if err != nil {
			return fmt.Errorf("warm-up: hold %q: %w", n, err)
		}
		held = append(held, l)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Go(func() {
			for _, n := range names {
				_, err := p.TryLock(ctx, shedlock.LockConfig{Name: n, LockAtMostFor: mostFor})
				if !errors.Is(err, shedlock.ErrNotAcquired) {
					errs[i] = fmt.Errorf("warm-up: pod %d on %q: got %v, want ErrNotAcquired", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			errs = append(errs, fmt.Errorf("warm-up: release: %w", err))
		}
	}
	return errors.Join(errs...)
}
