package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/shedlock-go/shedlock"
)

// list prints the locks, as a table or as JSON.
func list(ctx context.Context, c config, _ []string, _ io.Reader, stdout, _ io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.open(ctx, c, false)
	if err != nil {
		return err
	}
	defer s.Close()
	locks, err := s.Locks(ctx)
	if err != nil {
		return err
	}
	fires, err := lastFires(ctx, s, locks)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(stdout, locks, fires)
	}
	return writeTable(stdout, s.where, locks, fires)
}

// timeLayout is how the table shows times: UTC, to the millisecond the
// stores keep.
const timeLayout = "2006-01-02 15:04:05.000"

// writeTable prints the locks as a table; where names what they are in, for
// an empty one. fires, when the store keeps them, adds each lock's last fire
// time that succeeded (CatchUp jobs).
func writeTable(w io.Writer, where string, locks []shedlock.LockInfo, fires map[string]time.Time) error {
	if len(locks) == 0 {
		_, err := fmt.Fprintf(w, "no locks in %s\n", where)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "NAME\tHELD\tTIME LEFT\tLOCK UNTIL (UTC)\tLOCKED AT (UTC)\tLOCKED BY"
	if fires != nil {
		head += "\tLAST SUCCESS (UTC)"
	}
	steered := anySteered(locks)
	if steered {
		head += "\tPAUSED\tRUN-NOWS"
	}
	fmt.Fprintln(tw, head)
	for _, l := range locks {
		held, left := "no", "-"
		if l.Held {
			held, left = "yes", formatLeft(l.TimeLeft)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", display(l.Name), held, left,
			formatTime(l.LockUntil), formatTime(l.LockedAt), display(l.LockedBy))
		if fires != nil {
			fmt.Fprintf(tw, "\t%s", formatTime(fires[l.Name]))
		}
		if steered {
			fmt.Fprintf(tw, "\t%s\t%d", formatPause(l.Control), l.RunRequests)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// anySteered reports whether an operator paused a lock or asked for a run:
// only then does the table show those columns.
func anySteered(locks []shedlock.LockInfo) bool {
	for _, l := range locks {
		if l.Paused || l.RunRequests > 0 {
			return true
		}
	}
	return false
}

// formatPause shows a pause: "-", "until resumed", or its end in UTC.
func formatPause(c shedlock.Control) string {
	switch {
	case !c.Paused:
		return "-"
	case c.PausedUntil.IsZero():
		return "until resumed"
	}
	return "until " + formatTime(c.PausedUntil)
}

// formatTime shows t in UTC to the millisecond, or "-" when the store does not
// say (a Redis key without a time to live has no end).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// formatLeft rounds d for reading: to the second from a minute up, else to a
// tenth of a second.
func formatLeft(d time.Duration) string {
	switch {
	case d == noExpiry:
		return "no expiry"
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d < 100*time.Millisecond:
		return "<0.1s"
	}
	return d.Round(100 * time.Millisecond).String()
}

// lockJSON is one lock in -json output; the names are the table's columns. A
// Redis key without a time to live has time_left_ms -1 and no lock_until.
type lockJSON struct {
	Name       string     `json:"name"`
	Held       bool       `json:"held"`
	TimeLeftMS int64      `json:"time_left_ms"`
	LockUntil  *time.Time `json:"lock_until"`
	LockedAt   *time.Time `json:"locked_at"`
	LockedBy   string     `json:"locked_by"`
	// LastSuccess is the last fire time a CatchUp run of the lock succeeded
	// at, where the store keeps it.
	LastSuccess *time.Time `json:"last_success,omitempty"`
	// Paused, PausedUntil (absent: until resumed) and RunRequests are the
	// job's pause and run-nows pending (shedlock.Controller).
	Paused      bool       `json:"paused,omitempty"`
	PausedUntil *time.Time `json:"paused_until,omitempty"`
	RunRequests int64      `json:"run_requests,omitempty"`
}

func writeJSON(w io.Writer, locks []shedlock.LockInfo, fires map[string]time.Time) error {
	out := make([]lockJSON, len(locks))
	for i, l := range locks {
		left := l.TimeLeft.Milliseconds()
		if l.TimeLeft == noExpiry {
			left = -1
		}
		out[i] = lockJSON{Name: l.Name, Held: l.Held, TimeLeftMS: left,
			LockUntil: timeOrNil(l.LockUntil), LockedAt: timeOrNil(l.LockedAt), LockedBy: l.LockedBy,
			LastSuccess: timeOrNil(fires[l.Name]), Paused: l.Paused, PausedUntil: timeOrNil(l.PausedUntil),
			RunRequests: l.RunRequests}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
