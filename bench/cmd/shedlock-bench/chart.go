package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // registers png
	_ "gonum.org/v1/plot/vg/vgsvg" // registers svg
)

// series is one line of the chart: one store and one name count.
type series struct {
	label string
	steps []stepResult
}

// writeChart draws attempts/s, acquisitions/s and p99 TryLock latency against
// the number of pods, one line per series, side by side in one image whose
// format (svg or png) is path's extension.
func writeChart(path string, all []series) error {
	panels := []struct {
		title, ylabel string
		y             func(stepResult) float64
		log           bool // latencies span four orders of magnitude
	}{
		{"Lock attempts", "attempts/s (all pods)", stepResult.attemptsPerSec, false},
		{"Acquisitions", "acquisitions/s (all pods)", stepResult.acquiredPerSec, false},
		{"TryLock latency", "p99 (ms, log scale)", func(r stepResult) float64 { return ms(r.p99) }, true},
	}
	row := make([]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "pods (providers, each with its own pool)"
		p.Y.Label.Text = pn.ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = podTicks(all)
		if pn.log {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		} else {
			p.Y.Min = 0
			p.Y.Tick.Marker = wholeTicks{}
		}
		p.Legend.Top, p.Legend.Left = true, true
		var lines []any
		for _, s := range all {
			var xy plotter.XYs
			for _, r := range s.steps {
				if y := pn.y(r); y > 0 || !pn.log {
					xy = append(xy, plotter.XY{X: float64(r.pods), Y: y})
				}
			}
			lines = append(lines, s.label, xy)
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		// The colours are the same in every panel, so one legend serves all;
		// head room above the lines keeps it clear of them.
		if i > 0 {
			p.Legend = plot.NewLegend()
		}
		if pn.log {
			p.Y.Min *= 0.8
			p.Y.Max *= 3
		} else {
			p.Y.Max *= 1.6
		}
		row[i] = p
	}
	return writePanels(path, row)
}

// podTicks labels the x axis at the pod counts measured.
func podTicks(all []series) plot.ConstantTicks {
	seen := map[int]bool{}
	var ticks plot.ConstantTicks
	for _, s := range all {
		for _, r := range s.steps {
			if !seen[r.pods] {
				seen[r.pods] = true
				ticks = append(ticks, plot.Tick{Value: float64(r.pods), Label: strconv.Itoa(r.pods)})
			}
		}
	}
	return ticks
}

// wholeTicks are the default ticks labelled in plain decimals: the default
// labels switch to exponents (3e+04) for rates.
type wholeTicks struct{}

func (wholeTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// writePanels draws plots side by side, one panel each, into path (SVG, PNG, …
// by its extension).
func writePanels(path string, row []*plot.Plot) error {
	const panelW, h = 10 * vg.Centimeter, 9 * vg.Centimeter
	img, err := draw.NewFormattedCanvas(panelW*vg.Length(len(row)), h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	dc := draw.New(img)
	t := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Centimeter, PadTop: vg.Millimeter * 3,
		PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	for i, p := range row {
		p.Draw(t.At(dc, i, 0))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	if _, err := img.WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("chart: write %s: %w", path, err)
	}
	return f.Close()
}
