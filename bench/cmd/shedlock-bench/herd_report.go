package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// herdResult is one scale on one store: the library's side and the floor's.
type herdResult struct {
	store string
	scale herdScale
	pool  int
	sides [2]herdSide // library, floor
}

// herdSide is what one side did over its ticks.
type herdSide struct {
	ticks      int
	delays     []time.Duration // every run's start after its tick
	duplicates int             // runs beyond the first of a job in a tick
	missed     int             // jobs that ran nowhere in a tick
	errors     int
	errSample  []string
	late       int   // attempts given up as past their window
	attempts   int64 // one per job per pod per tick
	statements int64 // -1 when the server keeps no count
	peakConns  int   // the most any pod had open
	drain      time.Duration
	cpu        time.Duration // the pods' CPU time in all ticks
}

// add folds one tick's replies in and returns the latest task start; verbose,
// when not nil, gets a line on the tick. A warm-up tick counts its
// duplicates, missed jobs and errors, and none of its times or statements.
func (s *herdSide) add(replies []podReply, sc herdScale, before, after int64, verbose io.Writer, warmUp bool) time.Time {
	if warmUp {
		w := &herdSide{ticks: -1} // its verbose line says tick 0
		last := w.add(replies, sc, before, after, verbose, false)
		s.duplicates, s.missed, s.errors = s.duplicates+w.duplicates, s.missed+w.missed, s.errors+w.errors
		s.errSample = append(s.errSample, w.errSample...)
		return last
	}
	s.ticks++
	runs := make([]int, sc.jobs)
	var last int64
	from, drain := len(s.delays), time.Duration(0)
	for _, r := range replies {
		t := r.Tick
		for i, j := range t.Jobs {
			runs[j]++
			s.delays = append(s.delays, time.Duration(t.Delays[i]))
		}
		s.errors += t.Errors
		for _, e := range t.ErrSample {
			if len(s.errSample) < 5 && !slices.Contains(s.errSample, e) {
				s.errSample = append(s.errSample, e)
			}
		}
		s.late += t.Late
		s.peakConns = max(s.peakConns, t.PeakConns)
		drain = max(drain, time.Duration(t.Drained))
		s.cpu += time.Duration(t.CPU)
		last = max(last, t.LastStart)
	}
	for _, n := range runs {
		if n == 0 {
			s.missed++
		}
		s.duplicates += max(n-1, 0)
	}
	s.drain = max(s.drain, drain)
	s.attempts += int64(sc.pods * sc.jobs)
	if verbose != nil {
		d := slices.Clone(s.delays[from:])
		var cpu time.Duration
		for _, r := range replies {
			cpu += time.Duration(r.Tick.CPU)
		}
		fmt.Fprintf(verbose, "tick %d, %s: start p50 %v, p99 %v; drained in %v; %d statements; pods' CPU %v per attempt\n",
			s.ticks, replies[0].Tick.Kind, quantile(d, .5).Round(time.Millisecond), quantile(d, .99).Round(time.Millisecond),
			drain.Round(time.Millisecond), after-before, (cpu / time.Duration(sc.pods*sc.jobs)).Round(100*time.Nanosecond))
	}

	if before < 0 || s.statements < 0 {
		s.statements = -1
	} else {
		s.statements += after - before
	}
	return time.Unix(0, last)
}

func (s *herdSide) quantile(q float64) time.Duration { return quantile(s.delays, q) }

func printHerdHeader(out io.Writer) {
	fmt.Fprintln(out, "| pods × jobs | pool | side | start p50 | start p99 | start max | p99 ÷ floor's | duplicates | missed jobs | Run errors | "+
		"statements per attempt | peak connections per pod | given up late | longest drain |")
	fmt.Fprintln(out, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
}

// printHerd prints both sides of r; the start delays are every run's, from its
// tick to its task's start.
func printHerd(out io.Writer, r herdResult) {
	floorP99 := r.sides[1].quantile(0.99)
	for i, name := range []string{"library", "floor"} {
		s := &r.sides[i]
		ratio := "n/a"
		if floorP99 > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(s.quantile(0.99))/float64(floorP99))
		}
		stmts := "n/a"
		if s.statements >= 0 {
			stmts = fmt.Sprintf("%.2f", float64(s.statements)/float64(s.attempts))
		}
		late := "n/a"
		if i == 0 {
			late = thousands(s.late)
		}
		fmt.Fprintf(out, "| %v | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s |\n",
			r.scale, r.pool, name, msec(s.quantile(0.5)), msec(s.quantile(0.99)), msec(s.quantile(1)), ratio,
			thousands(s.duplicates), thousands(s.missed), thousands(s.errors), stmts, s.peakConns, late, msec(s.drain))
	}
}

// printHerdErrors prints a few distinct errors of each side that had any.
func printHerdErrors(out io.Writer, rs []herdResult) {
	for _, r := range rs {
		for i, name := range []string{"library", "floor"} {
			for _, e := range r.sides[i].errSample {
				fmt.Fprintf(out, "\n%s, %v, %s: %s", r.store, r.scale, name, e)
			}
		}
	}
	fmt.Fprintln(out)
}

func msec(d time.Duration) string {
	return thousands(int(d.Round(time.Millisecond)/time.Millisecond)) + " ms"
}

// thousands prints n with a comma every three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// writeHerdChart draws the winners' start p50 and p99 and the duplicates per
// tick against the number of pods, one line per store and side.
func writeHerdChart(path string, rs []herdResult) error {
	panels := []struct {
		title, ylabel string
		y             func(*herdSide) float64
	}{
		{"Start after the tick, p50", "ms", func(s *herdSide) float64 { return ms(s.quantile(0.5)) }},
		{"Start after the tick, p99", "ms", func(s *herdSide) float64 { return ms(s.quantile(0.99)) }},
		{"Duplicate runs", "per tick", func(s *herdSide) float64 { return float64(s.duplicates) / float64(s.ticks) }},
	}
	var stores []string
	for _, r := range rs {
		if !slices.Contains(stores, r.store) {
			stores = append(stores, r.store)
		}
	}
	row := make([]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "pods (jobs: " + jobsLabel(rs) + ")"
		p.Y.Label.Text = pn.ylabel
		p.Y.Min = 0
		p.Y.Tick.Marker = wholeTicks{}
		p.X.Tick.Marker = herdTicks(rs)
		p.Legend.Top, p.Legend.Left = true, true
		var lines []any
		for _, st := range stores {
			for side, name := range []string{"library", "floor"} {
				var xy plotter.XYs
				for _, r := range rs {
					if r.store == st {
						xy = append(xy, plotter.XY{X: float64(r.scale.pods), Y: pn.y(&r.sides[side])})
					}
				}
				lines = append(lines, shortLabel(st)+", "+name, xy)
			}
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		if i > 0 {
			p.Legend = plot.NewLegend()
		}
		p.Y.Max *= 1.6
		row[i] = p
	}
	return writePanels(path, row)
}

// herdTicks labels the x axis at the pod counts measured.
func herdTicks(rs []herdResult) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	seen := map[int]bool{}
	for _, r := range rs {
		if !seen[r.scale.pods] {
			seen[r.scale.pods] = true
			ticks = append(ticks, plot.Tick{Value: float64(r.scale.pods), Label: strconv.Itoa(r.scale.pods)})
		}
	}
	return ticks
}

// jobsLabel names the job count of each pod count: "16: 500, 32: 1,000".
func jobsLabel(rs []herdResult) string {
	var parts []string
	seen := map[herdScale]bool{}
	for _, r := range rs {
		if !seen[r.scale] {
			seen[r.scale] = true
			parts = append(parts, strconv.Itoa(r.scale.pods)+": "+thousands(r.scale.jobs))
		}
	}
	return strings.Join(parts, ", ")
}
