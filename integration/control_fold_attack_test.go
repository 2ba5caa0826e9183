package integration_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// On MySQL/MariaDB a case-insensitive, space-padded name column folds "JOB"
// and "job " into the row of "job": an operator who types the name so
// steers the job all the same, and every request counts for it.
func TestControlMySQLFoldedNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	table := testdb.NewControlTable(t, testdb.Open(t, nil))
	operator := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	pod := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	for _, n := range []string{"JOB", "job ", "Job"} {
		if _, err := operator.RunNow(ctx, n); err != nil {
			t.Fatalf("RunNow(%q): %v", n, err)
		}
	}
	got, err := pod.RunRequests(ctx, []string{"job"})
	if err != nil {
		t.Fatal(err)
	}
	if got["job"] != 3 || len(got) != 1 {
		t.Fatalf("RunRequests(job) after RunNow of JOB, 'job ', Job: %v, want job:3", got)
	}
	if err := operator.Pause(ctx, "jOb ", time.Time{}); err != nil {
		t.Fatal(err)
	}
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	if l, err := pod.TryLock(ctx, cfg); !errors.Is(err, shedlock.ErrPaused) {
		t.Fatalf("TryLock(job) after Pause(\"jOb \"): %v %v", l, err)
	}
	if err := operator.Resume(ctx, "JOB"); err != nil {
		t.Fatal(err)
	}
	l, err := pod.TryLock(ctx, cfg)
	if err != nil {
		t.Fatalf("TryLock(job) after Resume(JOB): %v", err)
	}
	if err := pod.RunDone(ctx, "job", l); err != nil {
		t.Fatal(err)
	}
	if got, _ := pod.RunRequests(ctx, []string{"job"}); got["job"] != 2 {
		t.Fatalf("after one RunDone: %v", got)
	}
	// A name longer than the column: refused, nothing steered.
	long := strings.Repeat("j", 300)
	if err := operator.Pause(ctx, long, time.Time{}); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Fatalf("Pause of a %d-character name: %v", len(long), err)
	}
	if _, err := operator.RunNow(ctx, long); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Fatalf("RunNow of a %d-character name: %v", len(long), err)
	}
}
