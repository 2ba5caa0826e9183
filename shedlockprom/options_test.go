package shedlockprom_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockprom"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestBadOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []shedlockprom.Option
		want string
	}{
		{"nil option", []shedlockprom.Option{nil}, "shedlockprom.NewMetrics: option 0 is nil"},
		{"nil second option", []shedlockprom.Option{shedlockprom.WithBuckets([]float64{1}), nil}, "option 1 is nil"},
		{"no buckets", []shedlockprom.Option{shedlockprom.WithBuckets(nil)}, "shedlockprom.WithBuckets: no buckets"},
		{"not increasing", []shedlockprom.Option{shedlockprom.WithBuckets([]float64{1, 5, 5})},
			"shedlockprom.WithBuckets: buckets not increasing: 5, then 5"},
		{"NaN", []shedlockprom.Option{shedlockprom.WithBuckets([]float64{1, math.NaN()})}, "shedlockprom.WithBuckets: bucket 1 is NaN"},
	}
	for _, tc := range cases {
		m, err := shedlockprom.NewMetrics(tc.opts...)
		if m != nil || !errors.Is(err, shedlock.ErrInvalidOption) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewMetrics = %v, %v; want an ErrInvalidOption naming %q", tc.name, m, err, tc.want)
		}
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, shedlock.ErrInvalidOption) {
					t.Errorf("%s: New panicked with %v, want an ErrInvalidOption", tc.name, err)
				}
			}()
			shedlockprom.New(tc.opts...)
		}()
	}
}

func TestNewNamesItselfInPanic(t *testing.T) {
	defer func() {
		err, _ := recover().(error)
		if err == nil || !strings.Contains(err.Error(), "shedlockprom.New: option 0 is nil") {
			t.Errorf("New panicked with %v", err)
		}
	}()
	shedlockprom.New(nil)
}

// The buckets given are used, and copied: changing the slice afterwards changes
// nothing.
func TestWithBuckets(t *testing.T) {
	buckets := []float64{0.5, 2, math.Inf(1)}
	m, err := shedlockprom.NewMetrics(shedlockprom.WithBuckets(buckets))
	if err != nil {
		t.Fatal(err)
	}
	buckets[0] = 100
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"), shedlock.WithListener(m))
	if _, err := ex.Run(context.Background(), job, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	stop(t, ex)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shedlock_run_duration_seconds" {
			continue
		}
		var bounds []float64
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if len(bounds) != 2 || bounds[0] != 0.5 || bounds[1] != 2 {
			t.Errorf("buckets %v, want [0.5 2]", bounds)
		}
		return
	}
	t.Error("no shedlock_run_duration_seconds")
}
