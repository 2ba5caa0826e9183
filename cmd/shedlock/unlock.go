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
// acquisition only; -force does not ask, and frees whoever holds it. A lock
// nobody holds is left as it is, its last holder's name with it.
func unlock(ctx context.Context, c config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return usageError{fmt.Sprintf("unlock takes one lock name, got %d arguments", len(args))}
	}
	name := args[0]
	octx, cancel := context.WithTimeout(ctx, c.timeout)
	s, err := c.open(octx, c, false)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	for range unlockAttempts {
		before, err := inspect(ctx, c, s, name)
		if err != nil {
			return err
		}
		if !before.Held {
			return notHeld(stdout, before, "")
		}
		if !c.force {
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
			// The job may have ended while the operator answered.
			if now, err := inspect(ctx, c, s, name); err == nil && !now.Held && sameHolder(now, before) {
				return notHeld(stdout, now, " (its holder released it while you answered)")
			}
		}
		// Free exactly what was read, asked about or not: a pod that takes the
		// lock meanwhile keeps it.
		fctx, cancel := context.WithTimeout(ctx, c.timeout)
		taken, err := s.ForceUnlockSeen(fctx, before)
		cancel()
		if errors.Is(err, shedlock.ErrLockChanged) && c.force {
			continue // -force frees whoever holds it now: read it again
		}
		if errors.Is(err, shedlock.ErrLockChanged) {
			now := "unknown"
			if info, ierr := inspect(ctx, c, s, name); ierr == nil {
				now = display(info.LockedBy)
			}
			return fmt.Errorf("not unlocked: lock %s changed hands while you answered (now %s); run unlock again",
				strconv.Quote(name), now)
		}
		if errors.Is(err, shedlock.ErrLockNotFound) {
			// Shown held, gone now (a Redis key is deleted when released).
			_, err = fmt.Fprintf(stdout, "lock %s was released meanwhile: nothing to unlock, nothing changed\n", strconv.Quote(name))
			return err
		}
		if err != nil {
			return err
		}
		if !taken.Held {
			_, err = fmt.Fprintf(stdout, "unlocked %s: its holder %s had just released it\n", strconv.Quote(name), display(taken.LockedBy))
			return err
		}
		_, err = fmt.Fprintf(stdout, "unlocked %s: taken from %s, which held it %s\n",
			strconv.Quote(name), display(taken.LockedBy), heldFor(taken.TimeLeft))
		return err
	}
	return fmt.Errorf("not unlocked: lock %s changed hands %d times while being freed; run unlock again",
		strconv.Quote(name), unlockAttempts)
}

// unlockAttempts bounds how often unlock -force reads the lock again because
// it changed hands between the read and the free.
const unlockAttempts = 5

// notHeld says that the lock is free and nothing was changed.
func notHeld(stdout io.Writer, l shedlock.LockInfo, why string) error {
	_, err := fmt.Fprintf(stdout, "lock %s is not held%s: nothing to unlock, nothing changed (last holder %s, until %s UTC)\n",
		strconv.Quote(l.Name), why, display(l.LockedBy), formatTime(l.LockUntil))
	return err
}

// sameHolder reports whether a and b are one acquisition.
func sameHolder(a, b shedlock.LockInfo) bool {
	return a.LockedBy == b.LockedBy && a.LockedAt.Equal(b.LockedAt)
}

// heldFor says how much longer a lock was to be held.
func heldFor(left time.Duration) string {
	if left == noExpiry {
		return "with no expiry"
	}
	return "for " + formatLeft(left) + " more"
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
