package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// The article's clock hazard. Two pods fire the same job on the same schedule;
// pod A runs first and releases, which keeps the lock for LockAtLeastFor; pod B
// fires a moment later in the same tick. If B's clock is ahead of A's by more
// than LockAtLeastFor and lock times are compared on the pods' clocks, B finds
// the lock expired and runs the tick again. Compared on the database clock, the
// pods' clocks do not matter, and neither do their sessions' time zones.
func TestMySQLClockSkew(t *testing.T) {
	t.Parallel()
	const least = time.Second
	for _, tc := range []struct {
		name         string
		skewB        time.Duration // client-clock pods: how far B's clock is ahead of A's
		clientClock  bool
		zoneA, zoneB string
		wantDoubles  bool
	}{
		{name: "ClientClockSkewAboveLockAtLeastFor", wantDoubles: true, clientClock: true, skewB: 3 * least},
		{name: "ClientClockSkewBelowLockAtLeastFor", clientClock: true, skewB: least / 4},
		// The pods' clocks may differ as above: database time never reads them.
		{name: "DatabaseTime"},
		{name: "DatabaseTimeMixedSessionZones", zoneA: "+09:00", zoneB: "-05:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := testdb.NewTable(t, testdb.Open(t, nil))
			pool := func(zone string) map[string]string {
				if zone == "" {
					return nil
				}
				return map[string]string{"time_zone": "'" + zone + "'"}
			}
			var a, b shedlock.LockProvider
			if tc.clientClock {
				a = newClientClockProvider(testdb.Open(t, nil), table, "pod-a", 0)
				b = newClientClockProvider(testdb.Open(t, nil), table, "pod-b", tc.skewB)
			} else {
				a = newMySQLProvider(t, testdb.Open(t, pool(tc.zoneA)), shedlock.WithTableName(table))
				b = newMySQLProvider(t, testdb.Open(t, pool(tc.zoneB)), shedlock.WithTableName(table))
			}
			runs, doubles := sameTick(t, a, b, shedlock.LockConfig{Name: "orderTimeoutCancelJob",
				LockAtMostFor: 10 * time.Second, LockAtLeastFor: least}, 3, 2*least)
			t.Logf("%d runs in 3 ticks, %d ticks run twice", runs, doubles)
			switch {
			case tc.wantDoubles && doubles == 0:
				t.Errorf("no tick ran twice: the hazard of pod clocks %v apart did not show", 3*least)
			case !tc.wantDoubles && doubles > 0:
				t.Errorf("%d of 3 ticks ran twice", doubles)
			case !tc.wantDoubles && runs != 3:
				t.Errorf("%d runs in 3 ticks, want one per tick", runs)
			}
		})
	}
}

// sameTick fires a job on both pods at each of ticks ticks, period apart, A
// first, and counts the runs and the ticks in which both pods ran it. The
// period leaves a tick's LockAtLeastFor time to end before the next, even when
// the tick's statements are slow on a busy machine.
func sameTick(t *testing.T, a, b shedlock.LockProvider, cfg shedlock.LockConfig, ticks int, period time.Duration) (runs, doubles int) {
	t.Helper()
	// First use (session and table checks) before the first tick, so that a
	// tick costs its statements only.
	for _, p := range []shedlock.LockProvider{a, b} {
		l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute})
		if err != nil {
			t.Fatalf("warm-up: %v", err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	exA := shedlock.NewExecutor(a)
	exB := shedlock.NewExecutor(b)
	task := func(ctx context.Context) error {
		time.Sleep(50 * time.Millisecond) // the job's work
		return nil
	}
	begin := time.Now()
	for k := range ticks {
		// The schedule: both pods fire at begin + k*period.
		time.Sleep(time.Until(begin.Add(time.Duration(k) * period)))
		ranA, errA := exA.Run(context.Background(), cfg, task)
		ranB, errB := exB.Run(context.Background(), cfg, task)
		if errA != nil || errB != nil {
			t.Fatalf("tick %d: %v, %v", k, errA, errB)
		}
		if ranA {
			runs++
		}
		if ranB {
			runs++
		}
		if ranA && ranB {
			doubles++
		}
	}
	return runs, doubles
}
