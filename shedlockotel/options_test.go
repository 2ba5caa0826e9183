package shedlockotel_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockotel"
)

func TestBadOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []shedlockotel.Option
		want string
	}{
		{"nil option", []shedlockotel.Option{nil}, "shedlockotel.New: option 0 is nil"},
		{"nil second option", []shedlockotel.Option{shedlockotel.WithBuckets([]float64{1}), nil}, "option 1 is nil"},
		{"nil meter provider", []shedlockotel.Option{shedlockotel.WithMeterProvider(nil)}, "shedlockotel.WithMeterProvider: nil MeterProvider"},
		{"nil tracer provider", []shedlockotel.Option{shedlockotel.WithTracerProvider(nil)}, "shedlockotel.WithTracerProvider: nil TracerProvider"},
		{"no buckets", []shedlockotel.Option{shedlockotel.WithBuckets(nil)}, "shedlockotel.WithBuckets: no buckets"},
		{"not increasing", []shedlockotel.Option{shedlockotel.WithBuckets([]float64{2, 1})},
			"shedlockotel.WithBuckets: buckets not increasing: 2, then 1"},
		{"NaN", []shedlockotel.Option{shedlockotel.WithBuckets([]float64{math.NaN()})}, "shedlockotel.WithBuckets: bucket 0 is NaN"},
		{"infinite", []shedlockotel.Option{shedlockotel.WithBuckets([]float64{1, math.Inf(1)})}, "shedlockotel.WithBuckets: bucket 1 is +Inf"},
	}
	for _, tc := range cases {
		l, err := shedlockotel.New(tc.opts...)
		if l != nil || !errors.Is(err, shedlock.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, %v; want an ErrInvalidOption naming %q", tc.name, l, err, tc.want)
		}
	}
}
