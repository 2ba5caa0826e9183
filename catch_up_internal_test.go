package shedlock

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestLatestFire(t *testing.T) {
	p := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	at := func(s string) time.Time {
		tm, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		spec, now string
		horizon   time.Duration
		want      string // "" for none
	}{
		{"*/10 * * * * *", "2026-01-01 10:00:25", time.Hour, "2026-01-01 10:00:20"},
		{"*/10 * * * * *", "2026-01-01 10:00:20", time.Hour, "2026-01-01 10:00:20"}, // at the fire time: it is due
		{"0 30 2 * * *", "2026-01-05 01:00:00", 48 * time.Hour, "2026-01-04 02:30:00"},
		{"0 30 2 * * *", "2026-01-05 01:00:00", time.Hour, ""}, // none within the horizon
		{"0 0 0 1 1 *", "2026-06-01 00:00:00", 366 * 24 * time.Hour, "2026-01-01 00:00:00"},
		{"* * * * * *", "2026-01-01 10:00:25.5", time.Hour, "2026-01-01 10:00:25"},
	} {
		s, err := p.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		now, err := time.Parse("2006-01-02 15:04:05.999", tc.now)
		if err != nil {
			t.Fatal(err)
		}
		got := latestFire(s.Next, now, tc.horizon)
		if tc.want == "" {
			if !got.IsZero() {
				t.Errorf("%s at %s within %v: %v, want none", tc.spec, tc.now, tc.horizon, got)
			}
			continue
		}
		if want := at(tc.want); !got.Equal(want) {
			t.Errorf("%s at %s within %v: %v, want %v", tc.spec, tc.now, tc.horizon, got, want)
		}
	}
}
