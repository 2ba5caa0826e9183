package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// watch lists the locks every interval until ctx ends (an interrupt), which is
// its normal end. A store that fails at the start is an error; one that fails
// later is shown in the view, which goes on.
func watch(ctx context.Context, c config, _ []string, _ io.Reader, stdout, _ io.Writer) error {
	s, err := openWithin(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	clear := isTerminal(stdout)
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for first := true; ; first = false {
		var frame bytes.Buffer
		if clear {
			frame.WriteString("\x1b[H\x1b[2J")
		}
		fmt.Fprintf(&frame, "%s  %s (%s), every %v; Ctrl-C stops\n\n",
			time.Now().Format(time.TimeOnly), s.where, c.store, c.interval)
		lctx, cancel := context.WithTimeout(ctx, c.timeout)
		locks, err := s.Locks(lctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && first:
			return err
		case err != nil:
			fmt.Fprintf(&frame, "error: %s\n", oneLine(err))
		default:
			if err := writeTable(&frame, s.where, locks, nil); err != nil { // list shows last successes
				return err
			}
		}
		frame.WriteString("\n")
		if _, err := stdout.Write(frame.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// isTerminal reports whether w is a terminal, where each view replaces the last.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
