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
func list(ctx context.Context, c config, args []string, _ io.Reader, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("list takes no arguments, got %q", args)}
	}
	s, err := openStore(c, false)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	locks, err := s.Locks(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(stdout, locks)
	}
	return writeTable(stdout, c.table, locks)
}

// timeLayout is how the table shows times: UTC, to the millisecond the
// stores keep.
const timeLayout = "2006-01-02 15:04:05.000"

func writeTable(w io.Writer, table string, locks []shedlock.LockInfo) error {
	if len(locks) == 0 {
		_, err := fmt.Fprintf(w, "no locks in table %s\n", table)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHELD\tTIME LEFT\tLOCK UNTIL (UTC)\tLOCKED AT (UTC)\tLOCKED BY")
	for _, l := range locks {
		held, left := "no", "-"
		if l.Held {
			held, left = "yes", formatLeft(l.TimeLeft)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, held, left,
			l.LockUntil.Format(timeLayout), l.LockedAt.Format(timeLayout), l.LockedBy)
	}
	return tw.Flush()
}

// formatLeft rounds d for reading: to the second from a minute up, else to a
// tenth of a second.
func formatLeft(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d < 100*time.Millisecond:
		return "<0.1s"
	}
	return d.Round(100 * time.Millisecond).String()
}

// lockJSON is one lock in -json output; the names are the table's columns.
type lockJSON struct {
	Name       string    `json:"name"`
	Held       bool      `json:"held"`
	TimeLeftMS int64     `json:"time_left_ms"`
	LockUntil  time.Time `json:"lock_until"`
	LockedAt   time.Time `json:"locked_at"`
	LockedBy   string    `json:"locked_by"`
}

func writeJSON(w io.Writer, locks []shedlock.LockInfo) error {
	out := make([]lockJSON, len(locks))
	for i, l := range locks {
		out[i] = lockJSON{Name: l.Name, Held: l.Held, TimeLeftMS: l.TimeLeft.Milliseconds(),
			LockUntil: l.LockUntil, LockedAt: l.LockedAt, LockedBy: l.LockedBy}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
