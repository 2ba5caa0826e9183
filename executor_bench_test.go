package shedlock

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkRunNoStore is Executor.Run with an empty task on a provider that
// answers at once with a lock that does nothing: the executor's own work per
// run, with no store's round trip to hide it.
func BenchmarkRunNoStore(b *testing.B) {
	ex := NewExecutor(&scriptedProvider{answers: map[string]error{}}, WithExecutorLogger(slog.New(slog.DiscardHandler)))
	b.Cleanup(func() { _ = ex.Stop(context.Background()) })
	cfg := LockConfig{Name: "job", LockAtMostFor: time.Minute}
	ctx := context.Background()
	task := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if ran, err := ex.Run(ctx, cfg, task); !ran || err != nil {
			b.Fatal(ran, err)
		}
	}
}
