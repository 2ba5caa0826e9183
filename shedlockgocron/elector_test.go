package shedlockgocron_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Two schedulers share one group: the jobs run on the leader's alone, and on
// the other's once the leader stops.
func TestElectorRunsJobsOnTheLeaderOnly(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	var ranA, ranB atomic.Int64
	leaders := make([]*shedlock.Leader, 2)
	for i, ran := range []*atomic.Int64{&ranA, &ranB} {
		l, err := shedlock.NewLeader(store.Provider(string(rune('a'+i))), "group", time.Minute,
			shedlock.WithLeaderRetryPeriod(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		leaders[i] = l
		t.Cleanup(func() { _ = l.Stop(context.Background()) })
		s, err := gocron.NewScheduler(gocron.WithDistributedElector(shedlockgocron.NewElector(l)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.NewJob(gocron.DurationJob(5*time.Millisecond), gocron.NewTask(func() { ran.Add(1) })); err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	leaders[0].Start()
	waitFor(t, leaders[0].IsLeader)
	leaders[1].Start()
	waitFor(t, func() bool { return ranA.Load() >= 5 })
	if n := ranB.Load(); n != 0 {
		t.Fatalf("the follower's scheduler ran the job %d times", n)
	}
	if err := leaders[0].Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ranB.Load() >= 5 })
}

func TestElectorAnswers(t *testing.T) {
	if err := shedlockgocron.NewElector(nil).IsLeader(context.Background()); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("nil leader: %v", err)
	}
	l, err := shedlock.NewLeader(shedlocktest.NewMemoryStore().Provider("a"), "g", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := shedlockgocron.NewElector(l).IsLeader(context.Background()); !errors.Is(err, shedlock.ErrNotLeader) {
		t.Errorf("before Start: %v", err)
	}
}

// waitFor polls cond until it holds, or fails the test after 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
