package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The tables are Markdown, so that a run can be pasted into the documentation.

func printStepHeader(out io.Writer) {
	fmt.Fprintln(out, "| names | pods | attempts/s | acquisitions/s | acquisitions ÷ floor | p50 TryLock | p99 TryLock | p99 ÷ floor cycle | server stmts/s | server stmts/attempt |")
	fmt.Fprintln(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
}

// printStep prints one step. "acquisitions ÷ floor" is acquisitions per second
// over the floor's bare cycles per second; "server stmts/attempt" is about
// 1 + acquired/attempts when each attempt is one statement and each acquisition
// adds one release.
func printStep(out io.Writer, r stepResult, f floorResult) {
	srv, perAttempt := "n/a", "n/a"
	if r.serverStmts >= 0 {
		srv = fmt.Sprintf("%.0f", r.serverPerSec())
		perAttempt = fmt.Sprintf("%.2f", float64(r.serverStmts)/float64(r.attempts))
	}
	fmt.Fprintf(out, "| %d | %d | %.0f | %.0f | %.2fx | %s | %s | %.1fx | %s | %s |\n",
		r.names, r.pods, r.attemptsPerSec(), r.acquiredPerSec(), r.acquiredPerSec()/f.cyclesPerSec(),
		dur(r.p50), dur(r.p99), float64(r.p99)/float64(f.perCycle), srv, perAttempt)
}

func printCold(out io.Writer, rs []coldResult, f floorResult) {
	fmt.Fprintf(out, "\ncold start: one provider, %d names it has never seen, TryLock+Unlock each, serially\n\n", rs[0].names)
	fmt.Fprintln(out, "| pass | per name | ÷ floor cycle | p50 TryLock | p99 TryLock | server stmts/name |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		perName := "n/a"
		if r.serverStmts >= 0 {
			perName = fmt.Sprintf("%.2f", float64(r.serverStmts)/float64(r.names))
		}
		fmt.Fprintf(out, "| %s | %s | %.2fx | %s | %s | %s |\n", r.pass, dur(r.perName()),
			float64(r.perName())/float64(f.perCycle), dur(r.p50), dur(r.p99), perName)
	}
}

// dur prints a latency in the unit that keeps three significant digits.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", ms(d))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}

// shortLabel keeps the product and major.minor version: "MariaDB 10.11".
func shortLabel(label string) string {
	product, version, ok := strings.Cut(label, " ")
	if !ok {
		return label
	}
	version, _, _ = strings.Cut(version, " ")
	parts := strings.SplitN(version, ".", 3)
	if len(parts) >= 2 {
		version = parts[0] + "." + parts[1]
	}
	return product + " " + version
}
