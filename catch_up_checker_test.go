package shedlock_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// checkers counts the goroutines that check CatchUp jobs' fire times.
func checkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "shedlock.(*catchUpJob).loop(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A CatchUp job removed from its cron (c.Remove) and added again, as a service
// reconfiguring its jobs does, leaves no checker behind: each ends once it
// sees its entry gone, not at the executor's Stop.
func TestCatchUpCheckerEndsWithItsEntry(t *testing.T) {
	e := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("pod"))
	defer e.Stop(context.Background())
	c := cron.New(cron.WithSeconds())
	cfg := shedlock.LockConfig{Name: "yearly-reconfigured", LockAtMostFor: time.Minute}
	before := checkers()
	add := func() cron.EntryID {
		t.Helper()
		id, err := e.Schedule(c, "0 0 0 1 1 *", cfg, noop, shedlock.CatchUp(time.Hour), shedlock.CatchUpRetry(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for range 30 {
		c.Remove(add())
	}
	add()
	deadline := time.Now().Add(10 * time.Second) // each looks again within max(retry, 1s)
	for n := checkers() - before; n != 1; n = checkers() - before {
		if time.Now().After(deadline) {
			t.Fatalf("%d checkers after 30 removals; want 1, the current entry's", n)
		}
		time.Sleep(10 * time.Millisecond) // a poll with a deadline
	}
}
