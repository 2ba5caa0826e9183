package shedlock

import (
	"context"
	"errors"
	"testing"
)

// handsStore is an adminStore whose one row changes hands before each of the
// first `moves` writes, as if other pods took the lock between read and write.
type handsStore struct {
	holder int // the row's locked_by is "pod-<holder>"
	moves  int
	clears int
}

func (s *handsStore) ready(context.Context) error { return nil }
func (s *handsStore) probe(context.Context) error { return nil }
func (s *handsStore) adminTable() string          { return "shedlock" }

func (s *handsStore) rows(_ context.Context, name string) ([]lockRow, error) {
	if name != "job" {
		return nil, nil
	}
	by := "pod-" + string(rune('0'+s.holder))
	return []lockRow{{LockInfo: LockInfo{Name: "job", LockedBy: by, Held: true}, lockedAtKey: s.holder}}, nil
}

func (s *handsStore) clear(_ context.Context, r lockRow) (bool, error) {
	s.clears++
	if s.moves > 0 {
		s.moves--
		s.holder++
		return false, nil
	}
	return r.lockedAtKey == s.holder, nil
}

// ForceUnlock reports the holder it freed the lock from: when the lock changes
// hands between its read and its write, it reads again; when it keeps changing,
// it gives up with an error rather than report a holder it did not take it from.
func TestAdminForceUnlockReadsAgainWhenTheLockMoves(t *testing.T) {
	s := &handsStore{moves: 2}
	info, err := adminForceUnlock(context.Background(), s, "job")
	if err != nil {
		t.Fatal(err)
	}
	if info.LockedBy != "pod-2" || s.clears != 3 {
		t.Errorf("got holder %q after %d writes, want pod-2 after 3", info.LockedBy, s.clears)
	}

	s = &handsStore{moves: forceUnlockAttempts}
	if _, err := adminForceUnlock(context.Background(), s, "job"); err == nil || errors.Is(err, ErrLockNotFound) {
		t.Errorf("a lock that keeps moving: want an error, got %v", err)
	}
	if s.clears != forceUnlockAttempts {
		t.Errorf("%d writes, want %d", s.clears, forceUnlockAttempts)
	}

	if _, err := adminForceUnlock(context.Background(), &handsStore{}, "other"); !errors.Is(err, ErrLockNotFound) {
		t.Errorf("missing name: want ErrLockNotFound, got %v", err)
	}
}
