package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// A grant the statement found paused is lockerr.Paused, alone and in a
// batch, on a store that upserts and on one that inserts then updates, with
// no statement more than a held lock's; a held lock that is not paused is
// lockerr.NotAcquired and not lockerr.Paused.
func TestPausedGrantIsErrPaused(t *testing.T) {
	for _, upserts := range []bool{true, false} {
		s := newFakeStore()
		s.upserts = upserts
		s.rows["paused"], s.rows["held"] = "", "other"
		s.paused = map[string]bool{"paused": true}
		e := testEngine(t, s)
		ctx := context.Background()
		for _, name := range []string{"paused", "held"} { // first sight: the name check, and the insert
			if _, err := e.TryLock(ctx, name, time.Minute, 0); !errors.Is(err, lockerr.NotAcquired) {
				t.Fatalf("upserts %t: %s: %v", upserts, name, err)
			}
		}
		before := s.count()
		_, err := e.TryLock(ctx, "paused", time.Minute, 0)
		if !errors.Is(err, lockerr.Paused) || !errors.Is(err, lockerr.NotAcquired) {
			t.Errorf("upserts %t: paused: %v", upserts, err)
		}
		_, err = e.TryLock(ctx, "held", time.Minute, 0)
		if !errors.Is(err, lockerr.NotAcquired) || errors.Is(err, lockerr.Paused) {
			t.Errorf("upserts %t: held: %v", upserts, err)
		}
		if n := s.count() - before; n != 2 {
			t.Errorf("upserts %t: %d statements for two refused attempts, want 2", upserts, n)
		}
		res, err := e.TryLockBatch(ctx, []BatchItem{{Name: "held", MostFor: time.Minute}, {Name: "paused", MostFor: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res[1].Err, lockerr.Paused) || errors.Is(res[0].Err, lockerr.Paused) || !errors.Is(res[0].Err, lockerr.NotAcquired) {
			t.Errorf("upserts %t: batch: %v, %v", upserts, res[0].Err, res[1].Err)
		}
	}
}

// BatchMembers finds a member by its exact name, else by the one name that
// differs in case alone; a name two members could be is not found.
func TestBatchMembers(t *testing.T) {
	member := BatchMembers([]BatchArgs{{Name: "Job"}, {Name: "job"}, {Name: "Other"}})
	for name, want := range map[string]int{"Job": 0, "job": 1, "OTHER": 2, "other": 2, "JOB": -1, "none": -1} {
		i, ok := member(name)
		if (want < 0 && ok) || (want >= 0 && (!ok || i != want)) {
			t.Errorf("%q: %d, %t; want %d", name, i, ok, want)
		}
	}
}
