package shedlockprom_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockprom"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// shedlock_leader is 1 while the instance leads, 0 after it stops.
func TestLeaderGauge(t *testing.T) {
	m := shedlockprom.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	leader, err := shedlock.NewLeader(shedlocktest.NewMemoryStore().Provider("a"), "group", time.Minute,
		shedlock.WithLeaderListener(m), shedlock.WithLeaderLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	leader.Start()
	const gauge = "shedlock_leader{lock=group}"
	deadline := time.Now().Add(5 * time.Second)
	for values(t, reg)[gauge] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never 1", gauge)
		}
		time.Sleep(time.Millisecond) // events reach listeners from a goroutine of their own
	}
	if err := leader.Stop(context.Background()); err != nil { // waits for the listeners
		t.Fatal(err)
	}
	if v := values(t, reg)[gauge]; v != 0 {
		t.Errorf("%s = %v after Stop", gauge, v)
	}
}
