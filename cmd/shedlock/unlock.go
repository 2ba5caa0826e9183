package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/shedlock-go/shedlock"
)

// unlock frees one lock by name. When it is held, it first says by whom and
// asks, since the holder may still be running the job; -force does not ask.
func unlock(ctx context.Context, c config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return usageError{fmt.Sprintf("unlock takes one lock name, got %d arguments", len(args))}
	}
	name := args[0]
	s, err := openStore(c, false)
	if err != nil {
		return err
	}
	defer s.Close()
	before, err := inspect(ctx, c, s, name)
	if err != nil {
		return err
	}
	if before.Held && !c.force {
		fmt.Fprintf(stderr, "Lock %q is held by %s for %s more (taken %s UTC).\n"+
			"If that holder is still running the job, another instance may start it now and both run at once.\n"+
			"Unlock it? [y/N] ", name, before.LockedBy, formatLeft(before.TimeLeft), before.LockedAt.Format(timeLayout))
		yes, err := confirm(ctx, stdin, stderr)
		if err != nil {
			return err
		}
		if !yes {
			return errors.New("not unlocked: the answer was not yes (-force unlocks without asking)")
		}
		// The question took a while: free the lock only if it is still the
		// one the answer was about.
		now, err := inspect(ctx, c, s, name)
		if err != nil {
			return err
		}
		if now.LockedBy != before.LockedBy || !now.LockedAt.Equal(before.LockedAt) {
			return fmt.Errorf("not unlocked: lock %q changed hands while you answered (now %s); run unlock again", name, now.LockedBy)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	taken, err := s.ForceUnlock(ctx, name)
	if err != nil {
		return err
	}
	if taken.Held {
		_, err = fmt.Fprintf(stdout, "unlocked %q: taken from %s, which held it for %s more\n",
			name, taken.LockedBy, formatLeft(taken.TimeLeft))
	} else {
		_, err = fmt.Fprintf(stdout, "unlocked %q: it was not held (last holder %s, until %s UTC)\n",
			name, taken.LockedBy, taken.LockUntil.Format(timeLayout))
	}
	return err
}

func inspect(ctx context.Context, c config, s *store, name string) (shedlock.LockInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return s.Inspect(ctx, name)
}

// confirm reads one line from stdin: true for y or yes. The end of input is no,
// and ends the question's line on stderr; an interrupt ends the wait.
func confirm(ctx context.Context, stdin io.Reader, stderr io.Writer) (bool, error) {
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(stderr)
		}
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	case <-ctx.Done():
		return false, fmt.Errorf("not unlocked: %w", context.Cause(ctx))
	}
}
