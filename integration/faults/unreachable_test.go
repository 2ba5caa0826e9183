package faults_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// A fixed-delay job whose database is unreachable for a while: no run starts in
// the outage, every failed attempt is logged, and runs resume on their own once
// the database is back.
func TestDatabaseUnreachable(t *testing.T) {
	r := newRig(t)
	a := r.pod()
	ex := r.executor(a)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second}
	g := r.guard(cfg.Name, a.provider.LockedBy())
	if err := ex.FixedDelay(cfg, 50*time.Millisecond, g.task(nil)); err != nil {
		t.Fatal(err)
	}
	ex.Start()
	waitFor(t, 10*time.Second, "first runs", func() bool { return g.runs.Load() >= 3 })

	a.proxy.SetDown(true)
	downAt := time.Now()
	failedBefore := r.log.count(slog.LevelError, "could not take lock")
	// An outage of 1.5s at least, with at least five failed attempts in it.
	waitFor(t, 10*time.Second, "failed attempts logged in the outage", func() bool {
		return r.log.count(slog.LevelError, "could not take lock") >= failedBefore+5 &&
			time.Since(downAt) > 1500*time.Millisecond
	})
	// Runs while the database is unreachable: only one that had begun before.
	inOutage := 0
	for len(g.started) > 0 {
		if at := <-g.started; at.After(downAt.Add(100 * time.Millisecond)) {
			inOutage++
		}
	}
	if inOutage > 0 {
		t.Errorf("%d runs started while the database was unreachable", inOutage)
	}
	// Direct calls say so too.
	if ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "other", LockAtMostFor: time.Second},
		g.task(nil)); ran || err == nil {
		t.Errorf("Run in the outage: want (false, error), got ran=%v err=%v", ran, err)
	}

	a.proxy.SetDown(false)
	upAt := time.Now()
	select {
	case at := <-g.started:
		t.Logf("outage %v; first run %v after the database came back", upAt.Sub(downAt).Round(time.Millisecond),
			at.Sub(upAt).Round(time.Millisecond))
	case <-time.After(cfg.LockAtMostFor + 10*time.Second):
		t.Fatalf("no run within %v of the database coming back", cfg.LockAtMostFor+10*time.Second)
	}
	g.verify(t)
}
