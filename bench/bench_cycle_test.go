package bench_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// benchMostFor is long enough that no cycle is ever freed by expiry: every
// acquisition is the UPDATE finding a released row.
const benchMostFor = time.Minute

var (
	libCfg    = shedlock.LockConfig{Name: "library", LockAtMostFor: benchMostFor}
	execCfg   = shedlock.LockConfig{Name: "executor", LockAtMostFor: benchMostFor}
	listenCfg = shedlock.LockConfig{Name: "executor-listener", LockAtMostFor: benchMostFor}
	keepCfg   = shedlock.LockConfig{Name: "executor-keepalive", LockAtMostFor: benchMostFor}
)

// cycleBench is one pool with three ways of running a lock cycle on it, each on
// a row of its own: the floor (the provider's two steady-state statements sent
// directly, prepared once, arguments boxed once: the least any library can do),
// the library (TryLock+Unlock) and the executor (Run with an empty task): plain,
// with a listener that does nothing (what a listener costs the run), and with
// keep-alive (what it costs a run shorter than a third of LockAtMostFor, which
// sends no Extend).
type cycleBench struct {
	p                    shedlock.LockProvider
	ex, exListen, exKeep *shedlock.Executor
	floor                func(ctx context.Context) error
}

func newCycleBench(b *testing.B, p shedlock.LockProvider, floor func(context.Context) error) *cycleBench {
	b.Helper()
	c := &cycleBench{p: p, floor: floor}
	quiet := shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler))
	c.ex = shedlock.NewExecutor(p, quiet)
	c.exListen = shedlock.NewExecutor(p, quiet, shedlock.WithListener(shedlock.ListenerFunc(func(context.Context, shedlock.Event) {})))
	c.exKeep = shedlock.NewExecutor(p, quiet, shedlock.WithKeepAlive())
	b.Cleanup(func() {
		for _, ex := range []*shedlock.Executor{c.ex, c.exListen, c.exKeep} {
			_ = ex.Stop(context.Background())
		}
	})
	// Warm up: the library's first INSERT, and every statement prepared on the
	// connection the serial loop keeps using.
	for range 3 {
		c.mustCycle(b, c.floor)
		c.mustCycle(b, c.library)
		c.mustCycle(b, c.executor)
		c.mustCycle(b, c.executorListener)
		c.mustCycle(b, c.executorKeepAlive)
	}
	return c
}

func (c *cycleBench) library(ctx context.Context) error {
	l, err := c.p.TryLock(ctx, libCfg)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// The executor's bounds by default (WithAcquireTimeout, WithReleaseTimeout).
const acquireTimeout, releaseTimeout = 10 * time.Second, 10 * time.Second

// libraryBounded is library under the bounds the executor puts on the same two
// statements: the acquire under a context with a deadline, the release under
// one of its own with a timeout. What it costs over library is the price of
// those bounds (the drivers watch a context that can end: go-sql-driver hands
// it to its watcher goroutine, the SQLite provider sends the statement from a
// goroutine of its own); what the executor costs over it is the executor's
// own.
func (c *cycleBench) libraryBounded(ctx context.Context) error {
	acqCtx, cancel := context.WithDeadline(ctx, time.Now().Add(acquireTimeout))
	l, err := c.p.TryLock(acqCtx, libCfg)
	cancel()
	if err != nil {
		return err
	}
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return l.Unlock(relCtx)
}

func emptyTask(context.Context) error { return nil }

func (c *cycleBench) executor(ctx context.Context) error {
	ran, err := c.ex.Run(ctx, execCfg, emptyTask)
	if err == nil && !ran {
		err = shedlock.ErrNotAcquired
	}
	return err
}

func (c *cycleBench) executorListener(ctx context.Context) error {
	return ran(c.exListen.Run(ctx, listenCfg, emptyTask))
}

func (c *cycleBench) executorKeepAlive(ctx context.Context) error {
	return ran(c.exKeep.Run(ctx, keepCfg, emptyTask))
}

func ran(ran bool, err error) error {
	if err == nil && !ran {
		err = shedlock.ErrNotAcquired
	}
	return err
}

func (c *cycleBench) mustCycle(b *testing.B, cycle func(context.Context) error) {
	if err := cycle(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// execFunc sends one statement: a prepared statement's ExecContext, or a
// pool's with the text bound, where the driver must not prepare.
type execFunc func(ctx context.Context, args ...any) (sql.Result, error)

// step is one statement of a floor cycle, checked as the library checks it.
type step func(ctx context.Context) error

// floorCycle returns the floor: acquire then release.
func floorCycle(acquire, release step) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := acquire(ctx); err != nil {
			return fmt.Errorf("floor acquire: %w", err)
		}
		if err := release(ctx); err != nil {
			return fmt.Errorf("floor release: %w", err)
		}
		return nil
	}
}

// execStep sends a statement that must change its row; with fence, its
// LAST_INSERT_ID is read too, as the MySQL provider reads the token.
func execStep(exec execFunc, args []any, fence bool) step {
	return func(ctx context.Context) error {
		res, err := exec(ctx, args...)
		if err != nil {
			return err
		}
		// MySQL's upsert counts a row it changed as 2.
		if n, err := res.RowsAffected(); err != nil || n < 1 || n > 2 {
			return fmt.Errorf("%d rows, want 1 or 2 (%v)", n, err)
		}
		if fence {
			if id, err := res.LastInsertId(); err != nil || id <= 0 {
				return fmt.Errorf("no fencing token: %d (%v)", id, err)
			}
		}
		return nil
	}
}

// queryFunc sends one statement whose RETURNING clause gives one row.
type queryFunc func(ctx context.Context, args ...any) *sql.Row

// queryStep sends a statement that returns the row it changed, and scans it
// into dest (the returned columns, boxed once): no row is an error, as a lock
// not taken.
func queryStep(query queryFunc, args []any, dest ...any) step {
	return func(ctx context.Context) error {
		return query(ctx, args...).Scan(dest...)
	}
}

// benchCycles runs each way of cycling as a sub-benchmark: ns/op and
// allocs/op of each, the floor's allocations being database/sql's and the
// driver's alone.
func benchCycles(b *testing.B, c *cycleBench) {
	for _, bc := range []struct {
		name  string
		cycle func(context.Context) error
	}{{"floor", c.floor}, {"library", c.library}, {"library-bounded", c.libraryBounded}, {"executor", c.executor},
		{"executor-listener", c.executorListener}, {"executor-keepalive", c.executorKeepAlive}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.mustCycle(b, bc.cycle)
			}
		})
	}
}

// benchVsFloor interleaves floor, library, executor and library-bounded
// cycles, rotating which goes first, so that all four see the same load on a
// shared machine, and reports each one's time per cycle and the ratios:
// lib/floor is the library's cost over the two bare round trips, exec/lib the
// executor's over bare TryLock+Unlock, bound/lib the price of the executor's
// bounds alone (library-bounded over library), and exec/bound the executor's
// own cost over the same statements under the same bounds. Allocations per
// cycle are counted after the timed loop; own-allocs/cycle is the library's
// beyond the floor's.
func benchVsFloor(b *testing.B, c *cycleBench) {
	ctx := context.Background()
	cycles := []func(context.Context) error{c.floor, c.library, c.executor, c.libraryBounded}
	var spent [4]time.Duration
	i := 0
	for b.Loop() {
		for k := range cycles {
			j := (i + k) % len(cycles)
			t0 := time.Now()
			if err := cycles[j](ctx); err != nil {
				b.Fatal(err)
			}
			spent[j] += time.Since(t0)
		}
		i++
	}
	n := float64(i)
	floorNs, libNs, execNs, boundNs := float64(spent[0])/n, float64(spent[1])/n, float64(spent[2])/n, float64(spent[3])/n
	b.ReportMetric(libNs, "ns/op")
	b.ReportMetric(floorNs, "floor-ns/cycle")
	b.ReportMetric(libNs, "lib-ns/cycle")
	b.ReportMetric(execNs, "exec-ns/cycle")
	b.ReportMetric(boundNs, "bound-ns/cycle")
	b.ReportMetric(libNs/floorNs, "lib/floor")
	b.ReportMetric(execNs/libNs, "exec/lib")
	b.ReportMetric(boundNs/libNs, "bound/lib")
	b.ReportMetric(execNs/boundNs, "exec/bound")

	b.StopTimer()
	var allocs [4]float64
	for j, cycle := range cycles {
		allocs[j] = testing.AllocsPerRun(20, func() { c.mustCycle(b, cycle) })
	}
	b.ReportMetric(allocs[0], "floor-allocs/cycle")
	b.ReportMetric(allocs[1], "lib-allocs/cycle")
	b.ReportMetric(allocs[1]-allocs[0], "own-allocs/cycle")
	b.ReportMetric(allocs[2], "exec-allocs/cycle")
	b.ReportMetric(allocs[3], "bound-allocs/cycle")
}
