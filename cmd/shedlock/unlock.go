package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock"
)

// unlock frees one lock by name. When it is held, it first says by whom and
// asks, since the holder may still be running the job, and then frees that
// acquisition only; -force does not ask, and frees whoever holds it.
func unlock(ctx context.Context, c config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return usageError{fmt.Sprintf("unlock takes one lock name, got %d arguments", len(args))}
	}
	name := args[0]
	octx, cancel := context.WithTimeout(ctx, c.timeout)
	s, err := openStore(octx, c, false)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	var shown *shedlock.LockInfo
	if !c.force {
		before, err := inspect(ctx, c, s, name)
		if err != nil {
			return err
		}
		// Free exactly what was read, asked about or not: a pod that takes the
		// lock meanwhile keeps it.
		shown = &before
		if before.Held {
			fmt.Fprintf(stderr, "Lock %s is held by %s %s (taken %s UTC).\n"+
				"If that holder is still running the job, another instance may start it now and both run at once.\n"+
				"Unlock it? [y/N] ", strconv.Quote(name), display(before.LockedBy), heldFor(before.TimeLeft), formatTime(before.LockedAt))
			yes, err := confirm(ctx, stdin, stderr)
			if err != nil {
				return err
			}
			if !yes {
				return errors.New("not unlocked: the answer was not yes (-force unlocks without asking)")
			}
		}
	}
	ctx, cancel = context.WithTimeout(ctx, c.timeout)
	defer cancel()
	taken, err := s.Unlock(ctx, name, shown)
	var moved changedHandsError
	if errors.As(err, &moved) {
		when := "since it was read"
		if shown.Held {
			when = "while you answered"
		}
		return fmt.Errorf("not unlocked: lock %s changed hands %s (now %s); run unlock again",
			strconv.Quote(name), when, display(moved.now.LockedBy))
	}
	if err != nil {
		return err
	}
	if taken.Held {
		_, err = fmt.Fprintf(stdout, "unlocked %s: taken from %s, which held it %s\n",
			strconv.Quote(name), display(taken.LockedBy), heldFor(taken.TimeLeft))
	} else {
		_, err = fmt.Fprintf(stdout, "unlocked %s: it was not held (last holder %s, until %s UTC)\n",
			strconv.Quote(name), display(taken.LockedBy), formatTime(taken.LockUntil))
	}
	return err
}

// heldFor says how much longer a lock was to be held.
func heldFor(left time.Duration) string {
	if left == noExpiry {
		return "with no expiry"
	}
	return "for " + formatLeft(left) + " more"
}

func inspect(ctx context.Context, c config, s store, name string) (shedlock.LockInfo, error) {
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
