package shedlockgocron_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
)

// hungProvider is a store that stops answering: a TryLock returns only when
// its context ends.
type hungProvider struct{}

func (hungProvider) TryLock(ctx context.Context, _ shedlock.LockConfig) (shedlock.Lock, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// Lock is bounded by its own timeout, whatever context gocron gives it: a
// store that stops answering cannot hold gocron's job goroutine.
func TestLockerLockIsBounded(t *testing.T) {
	locker := newLocker(t, hungProvider{}, time.Minute, 0, shedlockgocron.WithLockTimeout(50*time.Millisecond),
		shedlockgocron.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	done := make(chan error, 1)
	go func() {
		_, err := locker.Lock(context.Background(), "job")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock on a hung store: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock on a hung store had not returned after 5s; its timeout is 50ms")
	}
	if _, err := shedlockgocron.NewLocker(hungProvider{}, time.Minute, 0, shedlockgocron.WithLockTimeout(0)); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("WithLockTimeout(0): %v, want ErrInvalidOption", err)
	}
}
