package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shedlock-go/shedlock"
)

// targetReport is everything measured on one store.
type targetReport struct {
	label string
	floor floorResult
	steps map[int][]stepResult // by name count
	cold  []coldResult
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	var reports []targetReport
	my, _, err := openMySQL(ctx, cfg.dsn, cfg.mostFor)
	if err != nil {
		return err
	}
	r, err := measure(ctx, cfg, my, cfg.cold, out)
	if cerr := my.close(); err == nil && cerr != nil {
		err = fmt.Errorf("clean up: %w", cerr)
	}
	if err != nil {
		return err
	}
	reports = append(reports, r)

	if !cfg.noSQLite {
		lite, err := openSQLite(ctx, cfg.sqlitePath, cfg.mostFor)
		if err != nil {
			return err
		}
		r, err := measure(ctx, cfg, lite, 0, out)
		if cerr := lite.close(); err == nil && cerr != nil {
			err = fmt.Errorf("clean up: %w", cerr)
		}
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if cfg.chart == "" {
		return nil
	}
	var lines []series
	for _, r := range reports {
		for _, n := range cfg.names {
			lines = append(lines, series{label: fmt.Sprintf("%s, %d %s", shortLabel(r.label), n, plural(n, "name")), steps: r.steps[n]})
		}
	}
	if err := writeChart(cfg.chart, lines); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nchart: %s\n", cfg.chart)
	return nil
}

// measure runs the floor, every contention step and the cold start on t,
// printing each table as it completes.
func measure(ctx context.Context, cfg config, t *target, cold int, out io.Writer) (targetReport, error) {
	r := targetReport{label: t.label, steps: map[int][]stepResult{}}
	var err error
	if r.floor, err = measureFloor(ctx, t, cfg.floorTime); err != nil {
		return r, err
	}
	fmt.Fprintf(out, "\n## %s\n\nfloor (two bare single-row UPDATEs, prepared, one pool, serial): %v per cycle, %.0f cycles/s\n\n",
		t.label, r.floor.perCycle.Round(time.Microsecond), r.floor.cyclesPerSec())

	maxPods := slices.Max(cfg.pods)
	holder, err := t.newPod(ctx)
	if err != nil {
		return r, err
	}
	pods := make([]shedlock.LockProvider, maxPods)
	for i := range pods {
		if pods[i], err = t.newPod(ctx); err != nil {
			return r, err
		}
	}
	printStepHeader(out)
	for _, n := range cfg.names {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("job-%d-%04d", n, i)
		}
		if err := warmUp(ctx, holder, pods, names, cfg.mostFor); err != nil {
			return r, err
		}
		for _, k := range cfg.pods {
			s, err := runStep(ctx, t, pods[:k], names, cfg.mostFor, cfg.step)
			if err != nil {
				return r, err
			}
			r.steps[n] = append(r.steps[n], s)
			printStep(out, s, r.floor)
		}
	}
	if cold > 0 {
		if r.cold, err = coldStart(ctx, t, cold, cfg.mostFor); err != nil {
			return r, err
		}
		printCold(out, r.cold, r.floor)
	}
	return r, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
