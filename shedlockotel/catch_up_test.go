package shedlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestCatchUpCounters(t *testing.T) {
	h := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	l := h.l
	fire := time.Now().Truncate(time.Hour)
	l.OnEvent(context.Background(), shedlock.Event{Kind: shedlock.EventCatchUp, Config: job, FireTime: fire})
	for range 2 {
		l.OnEvent(context.Background(), shedlock.Event{Kind: shedlock.EventMissedFireTime, Config: job, FireTime: fire})
	}
	got := h.values(t)
	for k, want := range map[string]float64{
		"shedlock.catch_up.runs{shedlock.lock.name=job}":     1,
		"shedlock.fire_times.missed{shedlock.lock.name=job}": 2,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v (got %v)", k, got[k], want, got)
		}
	}
}
