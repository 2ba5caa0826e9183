package main

import (
	"context"
	"database/sql"
	"fmt"
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

// preparedCycle prepares a store's acquire and release statements once and
// returns the bare cycle: both sent directly, each changing its one row.
func preparedCycle(ctx context.Context, db *sql.DB, acquire, release string, acqArgs, relArgs []any) (func(context.Context) error, error) {
	acq, err := db.PrepareContext(ctx, acquire)
	if err != nil {
		return nil, fmt.Errorf("prepare floor: %w", err)
	}
	rel, err := db.PrepareContext(ctx, release)
	if err != nil {
		_ = acq.Close()
		return nil, fmt.Errorf("prepare floor: %w", err)
	}
	return func(ctx context.Context) error {
		if err := execOne(ctx, acq, acqArgs); err != nil {
			return fmt.Errorf("floor acquire: %w", err)
		}
		if err := execOne(ctx, rel, relArgs); err != nil {
			return fmt.Errorf("floor release: %w", err)
		}
		return nil
	}, nil
}

// execOne runs st and checks that it changed its one row, as a lock cycle does.
func execOne(ctx context.Context, st *sql.Stmt, args []any) error {
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return err
	}
	// MySQL's upsert counts a row it changed as 2.
	if n, err := res.RowsAffected(); err != nil || n < 1 || n > 2 {
		return fmt.Errorf("%d rows changed, want 1 or 2 (%v)", n, err)
	}
	return nil
}
