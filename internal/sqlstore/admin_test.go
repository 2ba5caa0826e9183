package sqlstore

import (
	"context"
	"errors"
	"testing"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// ForceUnlock reports the holder it freed the lock from: when the lock changes
// hands between its read and its write, it reads again; when it keeps changing,
// it gives up with an error rather than report a holder it did not take it from.
func TestForceUnlockReadsAgainWhenTheLockMoves(t *testing.T) {
	s := newFakeStore()
	s.moves = 2
	info, err := testEngine(t, s).ForceUnlock(context.Background(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if info.LockedBy != "pod-2" || s.clears != 3 {
		t.Errorf("got holder %q after %d writes, want pod-2 after 3", info.LockedBy, s.clears)
	}

	s = newFakeStore()
	s.moves = forceUnlockAttempts
	if _, err := testEngine(t, s).ForceUnlock(context.Background(), "job"); err == nil || errors.Is(err, lockerr.LockNotFound) {
		t.Errorf("a lock that keeps moving: want an error, got %v", err)
	}
	if s.clears != forceUnlockAttempts {
		t.Errorf("%d writes, want %d", s.clears, forceUnlockAttempts)
	}

	if _, err := testEngine(t, newFakeStore()).ForceUnlock(context.Background(), "other"); !errors.Is(err, lockerr.LockNotFound) {
		t.Errorf("missing name: want LockNotFound, got %v", err)
	}
}
