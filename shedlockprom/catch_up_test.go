package shedlockprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockprom"
)

func TestCatchUpCounters(t *testing.T) {
	m := shedlockprom.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	fire := time.Now().Truncate(time.Hour)
	m.OnEvent(context.Background(), shedlock.Event{Kind: shedlock.EventCatchUp, Config: job, FireTime: fire})
	for range 2 {
		m.OnEvent(context.Background(), shedlock.Event{Kind: shedlock.EventMissedFireTime, Config: job, FireTime: fire})
	}
	got := values(t, reg)
	for k, want := range map[string]float64{
		"shedlock_catch_up_runs_total{lock=job}":     1,
		"shedlock_missed_fire_times_total{lock=job}": 2,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}
