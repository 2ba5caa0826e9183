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
// nobody holds is left as it is, its last holder's name with it. args is the
// lock's name (see commandArgs).
func unlock(ctx context.Context, c config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	s, err := openWithin(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	u := unlocking{c: c, s: s, name: args[0], stdin: stdin, stdout: stdout, stderr: stderr}
	for range unlockAttempts {
		if again, err := u.attempt(ctx); !again {
			return err
		}
	}
	return fmt.Errorf("not unlocked: lock %s changed hands %d times while being freed; run unlock again",
		strconv.Quote(u.name), unlockAttempts)
}

// unlocking is one unlock command: the lock it frees, and its terminal.
type unlocking struct {
	c      config
	s      *store
	name   string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// attempt reads the lock, asks (unless -force), and frees the acquisition it
// read. again: -force found the lock changed hands meanwhile, and reads it
// again; else err is the command's outcome.
func (u *unlocking) attempt(ctx context.Context) (again bool, err error) {
	before, err := inspect(ctx, u.c, u.s, u.name)
	if err != nil {
		return false, err
	}
	if !before.Held {
		return false, notHeld(u.stdout, before, "")
	}
	if !u.c.force {
		if done, err := u.ask(ctx, before); done {
			return false, err
		}
	}
	// Free exactly what was read, asked about or not: a pod that takes the
	// lock meanwhile keeps it.
	fctx, cancel := context.WithTimeout(ctx, u.c.timeout)
	taken, err := u.s.ForceUnlockSeen(fctx, before)
	cancel()
	if errors.Is(err, shedlock.ErrLockChanged) && u.c.force {
		return true, nil // -force frees whoever holds it now: read it again
	}
	return false, u.freed(ctx, taken, err)
}

// ask says who holds the lock and asks whether to free it. done: the command
// ends with err, the answer being no or the lock released meanwhile.
func (u *unlocking) ask(ctx context.Context, before shedlock.LockInfo) (done bool, err error) {
	fmt.Fprintf(u.stderr, "Lock %s is held by %s %s (taken %s UTC).\n"+
		"If that holder is still running the job, another instance may start it now and both run at once.\n"+
		"Unlock it? [y/N] ", strconv.Quote(u.name), display(before.LockedBy), heldFor(before.TimeLeft), formatTime(before.LockedAt))
	yes, err := confirm(ctx, u.stdin, u.stderr)
	if err != nil {
		return true, err
	}
	if !yes {
		return true, errors.New("not unlocked: the answer was not yes (-force unlocks without asking)")
	}
	// The job may have ended while the operator answered.
	if now, err := inspect(ctx, u.c, u.s, u.name); err == nil && !now.Held && sameHolder(now, before) {
		return true, notHeld(u.stdout, now, " (its holder released it while you answered)")
	}
	return false, nil
}

// freed says what ForceUnlockSeen did: taken is the lock as it freed it.
func (u *unlocking) freed(ctx context.Context, taken shedlock.LockInfo, err error) error {
	name := strconv.Quote(u.name)
	switch {
	case errors.Is(err, shedlock.ErrLockChanged):
		now := "unknown"
		if info, ierr := inspect(ctx, u.c, u.s, u.name); ierr == nil {
			now = display(info.LockedBy)
		}
		return fmt.Errorf("not unlocked: lock %s changed hands while you answered (now %s); run unlock again", name, now)
	case errors.Is(err, shedlock.ErrLockNotFound):
		// Shown held, gone now (a Redis key is deleted when released).
		_, err = fmt.Fprintf(u.stdout, "lock %s was released meanwhile: nothing to unlock, nothing changed\n", name)
		return err
	case err != nil:
		return err
	case !taken.Held:
		_, err = fmt.Fprintf(u.stdout, "unlocked %s: its holder %s had just released it\n", name, display(taken.LockedBy))
		return err
	}
	_, err = fmt.Fprintf(u.stdout, "unlocked %s: taken from %s, which held it %s\n", name, display(taken.LockedBy), heldFor(taken.TimeLeft))
	return err
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
