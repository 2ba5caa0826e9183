package main

import (
	"context"
	"time"
)

// floorResult is the bare cycle's cost in this run.
type floorResult struct {
	perCycle time.Duration
	cycles   int
}

// cyclesPerSec is how many bare cycles one pool runs per second, serially.
func (f floorResult) cyclesPerSec() float64 { return float64(time.Second) / float64(f.perCycle) }

// measureFloor runs the target's floor cycle serially for d, after a short
// warm-up that prepares the statements on the connection the loop keeps.
func measureFloor(ctx context.Context, t *target, d time.Duration) (floorResult, error) {
	for range 10 {
		if err := t.floor(ctx); err != nil {
			return floorResult{}, err
		}
	}
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		if err := t.floor(ctx); err != nil {
			return floorResult{}, err
		}
		n++
	}
	return floorResult{perCycle: time.Since(start) / time.Duration(n), cycles: n}, nil
}
