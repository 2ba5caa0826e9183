package shedlockhttp

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The timeline's geometry, in SVG user units: a column of names, then the
// plot; one row a name.
const (
	tlWidth  = 1000
	tlLabelW = 190
	tlRowH   = 18
	tlAxisH  = 20
	tlMaxRow = 30
)

// timeline is the SVG of recent holds, terms and missed fire times.
type timeline struct {
	Height int
	Ticks  []tlTick
	Rows   []tlRow
	Span   string
	Empty  bool
}

type tlTick struct {
	X     float64
	Label string
	Last  bool // its label ends at its line, not centred on it
}

type tlRow struct {
	Y     int // the row's top
	BarY  int // its bars' top
	Label string
	Name  string
	Bars  []tlBar
	Marks []tlBar // missed fire times: a narrow mark each
}

type tlBar struct {
	X, W  float64
	Class string
	Title string
}

// timelineSpans are the widths the timeline picks from: the smallest that
// holds everything recorded, at most the last.
var timelineSpans = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour}

// newTimeline draws rec as of now.
func newTimeline(rec record, now time.Time) timeline {
	span := spanOf(rec, now)
	t0 := now.Add(-span)
	tl := timeline{Span: span.String()}
	rows := map[string]*tlRow{}
	row := func(name string) *tlRow {
		r := rows[name]
		if r == nil {
			r = &tlRow{Name: name, Label: shorten(name, 26)}
			rows[name] = r
		}
		return r
	}
	x := func(t time.Time) float64 {
		return round2(tlLabelW + float64(t.Sub(t0))/float64(span)*(tlWidth-tlLabelW))
	}
	bar := func(r *tlRow, start, end time.Time, class, title string) {
		if end.IsZero() {
			end = now
		}
		if end.Before(t0) {
			return
		}
		start = maxTime(start, t0)
		r.Bars = append(r.Bars, tlBar{X: x(start), W: round2(max(x(end)-x(start), 1.5)), Class: class, Title: title})
	}
	for _, h := range rec.Holds {
		bar(row(h.Name), h.Start, h.End, holdClass(h), holdTitle(h))
	}
	for _, t := range rec.Terms {
		bar(row(t.Name), t.Start, t.End, "term", termTitle(t))
	}
	for _, m := range rec.Missed {
		if !m.FireTime.Before(t0) {
			r := row(m.Name)
			r.Marks = append(r.Marks, tlBar{X: x(m.FireTime), Class: "missed",
				Title: "missed fire time " + m.FireTime.UTC().Format(timeLayout)})
		}
	}
	tl.Rows = pickRows(rows)
	tl.Empty = len(tl.Rows) == 0
	tl.Height = tlAxisH + max(len(tl.Rows), 1)*tlRowH + 4
	for i := 0; i <= 5; i++ {
		at := t0.Add(span * time.Duration(i) / 5)
		tl.Ticks = append(tl.Ticks, tlTick{X: x(at), Label: at.UTC().Format("15:04:05"), Last: i == 5})
	}
	return tl
}

// spanOf is the smallest of timelineSpans that holds everything rec
// recorded, or the last.
func spanOf(rec record, now time.Time) time.Duration {
	oldest := now
	for _, h := range rec.Holds {
		oldest = minTime(oldest, h.Start)
	}
	for _, t := range rec.Terms {
		oldest = minTime(oldest, t.Start)
	}
	for _, m := range rec.Missed {
		oldest = minTime(oldest, m.FireTime)
	}
	for _, s := range timelineSpans {
		if now.Sub(oldest) <= s {
			return s
		}
	}
	return timelineSpans[len(timelineSpans)-1]
}

// pickRows keeps the rows with a bar or mark in the window, by name, at most
// tlMaxRow: those last active.
func pickRows(rows map[string]*tlRow) []tlRow {
	var out []tlRow
	for _, r := range rows {
		if len(r.Bars)+len(r.Marks) > 0 {
			out = append(out, *r)
		}
	}
	if len(out) > tlMaxRow {
		last := func(r tlRow) float64 {
			m := 0.0
			for _, b := range append(r.Bars, r.Marks...) {
				m = max(m, b.X+b.W)
			}
			return m
		}
		slices.SortFunc(out, func(a, b tlRow) int { return cmp.Compare(last(b), last(a)) })
		out = out[:tlMaxRow]
	}
	slices.SortFunc(out, func(a, b tlRow) int { return strings.Compare(a.Name, b.Name) })
	for i := range out {
		out[i].Y = tlAxisH + i*tlRowH
		out[i].BarY = out[i].Y + 3
	}
	return out
}

func holdClass(h Hold) string {
	switch {
	case h.Lost:
		return "lost"
	case h.Result == "":
		return "running"
	}
	return h.Result
}

func holdTitle(h Hold) string {
	s := fmt.Sprintf("%s held here from %s", h.Name, h.Start.UTC().Format(timeLayout))
	if h.End.IsZero() {
		return s + ", running"
	}
	s += fmt.Sprintf(" for %v: %s", h.End.Sub(h.Start).Round(time.Millisecond), h.Result)
	if h.Lost {
		s += ", lock lost"
	}
	if !h.CatchUp.IsZero() {
		s += ", catching up " + h.CatchUp.UTC().Format(timeLayout)
	}
	return s
}

func termTitle(t Term) string {
	s := fmt.Sprintf("%s led here from %s", t.Name, t.Start.UTC().Format(timeLayout))
	if t.Fence != 0 {
		s += fmt.Sprintf(" (fence %d)", t.Fence)
	}
	if !t.End.IsZero() {
		s += fmt.Sprintf(" for %v", t.End.Sub(t.Start).Round(time.Millisecond))
	}
	return s
}

// round2 rounds to hundredths of a unit: finer than a screen shows.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

// shorten cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
