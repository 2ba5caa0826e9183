package shedlockredis_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// skewedSchedule fires each time of s skew early: a pod whose clock is skew
// ahead (behind, for a negative skew).
type skewedSchedule struct {
	s    cron.Schedule
	skew time.Duration
}

func (s skewedSchedule) Next(t time.Time) time.Time { return s.s.Next(t.Add(s.skew)).Add(-s.skew) }

type skewedParser struct{ skew time.Duration }

func (p skewedParser) Parse(spec string) (cron.Schedule, error) {
	s, err := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor).Parse(spec)
	if p.skew == 0 {
		// As parsed: Schedule knows an @every spec, whose fire times are each
		// instance's own, by its type.
		return s, err
	}
	return skewedSchedule{s, p.skew}, err
}

// schedulePods adds a job with Schedule on one cron and executor per skew,
// each on a provider and client of its own in env, and returns the crons and
// the times of the runs.
func schedulePods(t *testing.T, spec string, skews ...time.Duration) ([]*cron.Cron, func() []time.Time) {
	env := newEnv(t)
	var mu sync.Mutex
	var runs []time.Time
	var crons []*cron.Cron
	for _, skew := range skews {
		c := cron.New(cron.WithParser(skewedParser{skew}))
		ex := shedlock.NewExecutor(newProvider(t, newClient(t), shedlockredis.WithEnv(env)),
			shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)))
		t.Cleanup(func() {
			_ = ex.Stop(context.Background())
			<-c.Stop().Done()
		})
		_, err := ex.Schedule(c, spec, shedlock.LockConfig{Name: "scheduled", LockAtMostFor: 10 * time.Second},
			func(context.Context) error {
				mu.Lock()
				runs = append(runs, time.Now())
				mu.Unlock()
				return nil
			})
		require.NoError(t, err)
		crons = append(crons, c)
	}
	return crons, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), runs...)
	}
}

// Two pods whose `@every 2s` schedules start one second apart run the job
// about once per 2s between them. robfig/cron's @every fires on whole seconds
// counted from the start, so the offset is set on the second: crons started
// 1.1s apart at x.95 would fire on the same seconds.
func TestScheduleEveryOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	t.Parallel()
	crons, runs := schedulePods(t, "@every 2s", 0, 0)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1200 * time.Millisecond)))
	start := time.Now()
	crons[0].Start()
	time.Sleep(time.Until(start.Add(time.Second)))
	crons[1].Start()
	time.Sleep(time.Until(start.Add(11300 * time.Millisecond)))
	for _, c := range crons {
		<-c.Stop().Done()
	}
	got := runs()
	t.Logf("%d runs in 11s: %v", len(got), got)
	assert.GreaterOrEqual(t, len(got), 4)
	assert.LessOrEqual(t, len(got), 6)
	for i := 1; i < len(got); i++ {
		assert.Greater(t, got[i].Sub(got[i-1]), 1500*time.Millisecond, "two runs within one period")
	}
}

// Three pods with clocks 300ms apart fire every even second: each fire time runs
// once, also as the pods stop one by one.
func TestScheduleFixedTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	t.Parallel()
	crons, runs := schedulePods(t, "*/2 * * * * *", -150*time.Millisecond, 0, 150*time.Millisecond)
	for _, c := range crons {
		c.Start()
	}
	for i := 2; i >= 0; i-- {
		time.Sleep(4 * time.Second)
		<-crons[i].Stop().Done()
	}
	counts := map[time.Time]int{}
	var first, last time.Time
	for _, at := range runs() {
		fire := at.Round(2 * time.Second)
		counts[fire]++
		if first.IsZero() || fire.Before(first) {
			first = fire
		}
		if fire.After(last) {
			last = fire
		}
	}
	t.Logf("runs per fire time: %v", counts)
	require.NotEmpty(t, counts)
	assert.GreaterOrEqual(t, len(counts), 4)
	for fire := first; !fire.After(last); fire = fire.Add(2 * time.Second) {
		assert.Equal(t, 1, counts[fire], "runs of the fire time %s", fire.Format("15:04:05"))
	}
}
