package shedlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// coarseProvider is a memory store that says it keeps locks in whole seconds,
// for at least two, as etcd's leases at its defaults; it records the configs
// it is asked for.
type coarseProvider struct {
	shedlock.LockProvider
	mu   sync.Mutex
	asks []shedlock.LockConfig
}

func (p *coarseProvider) HoldGranularity() (step, min time.Duration) {
	return time.Second, 2 * time.Second
}

func (p *coarseProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	p.mu.Lock()
	p.asks = append(p.asks, cfg)
	p.mu.Unlock()
	return p.LockProvider.TryLock(ctx, cfg)
}

var _ shedlock.HoldGranularity = (*coarseProvider)(nil)

// Schedule asks a store with a HoldGranularity for a hold it keeps, rounded,
// no later than the skew bound before the next fire time: whole seconds,
// rounded down.
func TestScheduleHoldRoundedToStore(t *testing.T) {
	t.Parallel()
	p := &coarseProvider{LockProvider: shedlocktest.NewMemoryStore().Provider("a")}
	ex := shedlock.NewExecutor(p)
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	c := cron.New(cron.WithSeconds()) // never started: the test calls the entry as cron would
	cfg := shedlock.LockConfig{Name: "hourly", LockAtMostFor: time.Second + 300*time.Millisecond}
	id, err := ex.Schedule(c, "*/5 * * * * *", cfg, func(context.Context) error { return nil })
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	// Called as cron calls it, just after a fire time: a call far from one is
	// late for it, and skipped.
	fire := c.Entry(id).Schedule.Next(time.Now())
	<-time.After(time.Until(fire.Add(10 * time.Millisecond)))
	before := time.Now()
	c.Entry(id).WrappedJob.Run()
	next := c.Entry(id).Schedule.Next(before)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.asks) != 1 {
		t.Fatalf("TryLock asked %d times, want 1", len(p.asks))
	}
	got := p.asks[0]
	avail := next.Sub(before) - shedlock.DefaultClockSkew
	if got.LockAtLeastFor%time.Second != 0 || got.LockAtLeastFor > avail || got.LockAtLeastFor <= avail-2*time.Second {
		t.Errorf("LockAtLeastFor %v: want whole seconds, no more than %v, within a second or two of it", got.LockAtLeastFor, avail)
	}
	if got.LockAtMostFor != got.LockAtLeastFor {
		t.Errorf("LockAtMostFor %v: want the hold, %v, above the job's %v", got.LockAtMostFor, got.LockAtLeastFor, cfg.LockAtMostFor)
	}
}

// Schedule refuses a spec whose fire times are too close for a store's
// HoldGranularity to hold a run's lock past the skew bound and free it the
// bound before the next fire time, naming the interval that works; it takes
// that interval.
func TestScheduleRefusesIntervalBelowStoreHold(t *testing.T) {
	t.Parallel()
	noop := func(context.Context) error { return nil }
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	for _, tc := range []struct {
		spec string
		opts []shedlock.JobOption
		need string // "" for accepted
	}{
		{"*/2 * * * * *", nil, "3s"},
		{"@every 2s", nil, "3s"},
		{"*/3 * * * * *", nil, ""},
		{"*/3 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(time.Second)}, "4s"},
		{"*/4 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(time.Second)}, ""},
		{"*/4 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(1500 * time.Millisecond)}, "5s"},
		{"*/5 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(2 * time.Second)}, "7s"},
		{"0,7,14 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(2 * time.Second)}, ""},
		{"0 * * * * *", nil, ""},
	} {
		p := &coarseProvider{LockProvider: shedlocktest.NewMemoryStore().Provider("a")}
		ex := shedlock.NewExecutor(p)
		c := cron.New(cron.WithSeconds())
		_, err := ex.Schedule(c, tc.spec, cfg, noop, tc.opts...)
		if tc.need == "" {
			if err != nil {
				t.Errorf("%s %v: %v", tc.spec, tc.opts, err)
			}
			continue
		}
		if !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", tc.spec, err)
			continue
		}
		for _, want := range []string{"at least " + tc.need + " apart", "steps of 1s", "at least 2s", "larger interval"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v: does not say %q", tc.spec, err, want)
			}
		}
		if len(c.Entries()) != 0 {
			t.Errorf("%s: entry added on error", tc.spec)
		}
	}
}
