package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A cron made with cron.WithLocation fires a time-of-day spec in its own zone;
// the run's hold must count to the next fire time in that zone, not in the
// process's. Here the cron's zone is nine hours from the process's (UTC),
// so a hold counted in UTC would be nine hours off.
func TestScheduleHoldCountsInTheCronsZone(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("UTC+9", 9*3600)
	local := time.Local
	if _, off := time.Now().In(local).Zone(); off == 9*3600 {
		zone = time.FixedZone("UTC-3", -3*3600)
	}
	ex, rec := listened(shedlocktest.NewMemoryStore().Provider("a"))
	c := cron.New(cron.WithLocation(zone))
	cfg := shedlock.LockConfig{Name: "nightly", LockAtMostFor: time.Minute}
	id, err := ex.Schedule(c, "0 9 * * *", cfg, func(context.Context) error { return nil })
	require.NoError(t, err)

	before := time.Now()
	c.Entry(id).Job.Run()
	after := time.Now()
	attempts := of(stopped(t, ex, rec), shedlock.EventAttempt)
	require.Len(t, attempts, 1)
	next := func(now time.Time) time.Time {
		n := time.Date(now.Year(), now.Month(), now.Day(), 9, 0, 0, 0, zone)
		if !n.After(now) {
			n = n.AddDate(0, 0, 1)
		}
		return n
	}
	skew := shedlock.DefaultClockSkew
	least := attempts[0].Config.LockAtLeastFor
	assert.LessOrEqual(t, least, next(before.In(zone)).Sub(before)-skew, "hold past the next 09:00 in the cron's zone")
	assert.GreaterOrEqual(t, least, next(after.In(zone)).Sub(after)-skew-time.Millisecond, "hold short of the next 09:00 in the cron's zone")
}
