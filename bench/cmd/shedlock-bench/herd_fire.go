package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock"
)

// withFireTime tells Run the tick its attempt belongs to.
func withFireTime(ctx context.Context, at time.Time) context.Context {
	return shedlock.ContextWithFireTime(ctx, at)
}

// lateCounter counts the attempts an executor gave up as too late for their
// fire time, from its log: a listener would queue four events per run.
type lateCounter struct{ n atomic.Int64 }

func (c *lateCounter) options() []shedlock.ExecutorOption {
	h := &countingHandler{Handler: slog.NewTextHandler(io.Discard, nil), c: c}
	return []shedlock.ExecutorOption{shedlock.WithExecutorLogger(slog.New(h)), shedlock.WithSkipLogLevel(slog.LevelInfo)}
}

type countingHandler struct {
	slog.Handler
	c *lateCounter
}

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "window") {
		h.c.n.Add(1)
	}
	return nil
}
