package shedlock

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkRunNoStore is Executor.Run with an empty task on a provider that
// answers at once with a lock that does nothing: the executor's own work per
// run, with no store's round trip to hide it (executor), beside TryLock and
// Unlock on the same provider under the executor's bounds alone (bounds: the
// acquire under a deadline, the release under a timeout of its own).
func BenchmarkRunNoStore(b *testing.B) {
	cfg := LockConfig{Name: "job", LockAtMostFor: time.Minute}
	ctx := context.Background()
	b.Run("bounds", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			acqCtx, cancel := context.WithDeadline(ctx, time.Now().Add(10*time.Second))
			l, err := nopProvider{}.TryLock(acqCtx, cfg)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err = l.Unlock(relCtx)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("executor", func(b *testing.B) {
		ex := NewExecutor(nopProvider{}, WithExecutorLogger(slog.New(slog.DiscardHandler)))
		b.Cleanup(func() { _ = ex.Stop(context.Background()) })
		task := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if ran, err := ex.Run(ctx, cfg, task); !ran || err != nil {
				b.Fatal(ran, err)
			}
		}
	})
}

// nopProvider takes every lock at once, with a lock that does nothing.
type nopProvider struct{}

func (nopProvider) TryLock(context.Context, LockConfig) (Lock, error) { return nopLock{}, nil }
