package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/shedlock-go/shedlock"
)

// openController opens the store for a command that steers a job, which
// needs a store that keeps pauses and run-nows (shedlock.Controller); args
// is the job's name (see commandArgs).
func openController(ctx context.Context, c config, command string, args []string) (*store, shedlock.Controller, string, error) {
	s, err := c.open(ctx, c, false)
	if err != nil {
		return nil, nil, "", err
	}
	ctl, ok := s.Admin.(shedlock.Controller)
	if !ok {
		_ = s.Close()
		return nil, nil, "", fmt.Errorf("%s: the %s store here keeps no pause or run-now (it is no shedlock.Controller)", command, c.store)
	}
	return s, ctl, args[0], nil
}

// pause stops a job on every instance until resumed, or for -for: each
// instance's next attempt is refused by the store. A run under way goes on.
func pause(ctx context.Context, c config, args []string, _ io.Reader, stdout, _ io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, ctl, name, err := openController(ctx, c, "pause", args)
	if err != nil {
		return err
	}
	defer s.Close()
	var until time.Time
	if c.pauseFor > 0 {
		until = time.Now().Add(c.pauseFor).UTC()
	}
	if err := ctl.Pause(ctx, name, until); err != nil {
		return err
	}
	if until.IsZero() {
		_, err = fmt.Fprintf(stdout, "paused %s on every instance until resumed (shedlock resume %s)\n", strconv.Quote(name), display(name))
		return err
	}
	_, err = fmt.Fprintf(stdout, "paused %s on every instance until %s UTC\n", strconv.Quote(name), formatTime(until))
	return err
}

// resume ends a pause.
func resume(ctx context.Context, c config, args []string, _ io.Reader, stdout, _ io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, ctl, name, err := openController(ctx, c, "resume", args)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := ctl.Resume(ctx, name); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "resumed %s\n", strconv.Quote(name))
	return err
}

// runNow asks for one run of a job: the first instance that checks runs it,
// under its lock, once per call.
func runNow(ctx context.Context, c config, args []string, _ io.Reader, stdout, _ io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, ctl, name, err := openController(ctx, c, "run", args)
	if err != nil {
		return err
	}
	defer s.Close()
	pending, err := ctl.RunNow(ctx, name)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "asked for a run of %s: %d pending\n", strconv.Quote(name), pending)
	return err
}
