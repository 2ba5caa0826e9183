package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/retry"
)

func TestDo(t *testing.T) {
	fail := errors.New("no answer")
	tries, told := 0, []int{}
	err := retry.Do(context.Background(), 3, time.Millisecond, func() error { tries++; return fail },
		func(attempt int, err error) { told = append(told, attempt) })
	if !errors.Is(err, fail) || tries != 4 || len(told) != 3 || told[2] != 2 {
		t.Fatalf("always failing: %v after %d tries, told %v; want 4 tries, told 0..2", err, tries, told)
	}
	tries = 0
	if err := retry.Do(context.Background(), 3, time.Millisecond, func() error {
		tries++
		if tries < 2 {
			return fail
		}
		return nil
	}, nil); err != nil || tries != 2 {
		t.Fatalf("second try succeeds: %v after %d tries", err, tries)
	}
}

// An ended context ends the wait: the try that follows is the last.
func TestDoStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fail := errors.New("no answer")
	tries := 0
	done := make(chan error, 1)
	go func() {
		done <- retry.Do(ctx, 5, time.Hour, func() error { tries++; return fail }, func(int, error) { cancel() })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, fail) || tries != 2 {
			t.Fatalf("%v after %d tries; want the second try's error", err, tries)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an ended context did not end the hour's wait")
	}
}
