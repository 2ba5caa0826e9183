package shedlockotel_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockotel"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// shedlock.leader is 1 while the instance leads, 0 after it stops.
func TestLeaderGauge(t *testing.T) {
	h := &harness{reader: sdkmetric.NewManualReader()}
	l, err := shedlockotel.New(shedlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))))
	if err != nil {
		t.Fatal(err)
	}
	leader, err := shedlock.NewLeader(shedlocktest.NewMemoryStore().Provider("a"), "group", time.Minute,
		shedlock.WithLeaderListener(l), shedlock.WithLeaderLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	leader.Start()
	const gauge = "shedlock.leader{shedlock.lock.name=group}"
	deadline := time.Now().Add(5 * time.Second)
	for h.values(t)[gauge] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never 1", gauge)
		}
		time.Sleep(time.Millisecond) // events reach listeners from a goroutine of their own
	}
	if err := leader.Stop(context.Background()); err != nil { // waits for the listeners
		t.Fatal(err)
	}
	if v := h.values(t)[gauge]; v != 0 {
		t.Errorf("%s = %v after Stop", gauge, v)
	}
}
