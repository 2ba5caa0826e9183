package shedlockgocron_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func newLocker(t *testing.T, p shedlock.LockProvider, most, least time.Duration, opts ...shedlockgocron.Option) *shedlockgocron.Locker {
	t.Helper()
	l, err := shedlockgocron.NewLocker(p, most, least, opts...)
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	return l
}

// lockedWithin polls until p can take name, or fails t after timeout.
func lockedWithin(t *testing.T, p shedlock.LockProvider, name string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
		if err == nil {
			_ = l.Unlock(context.Background())
			return time.Since(start)
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) || time.Since(start) > timeout {
			t.Fatalf("lock %q not free within %v: %v", name, timeout, err)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval, not a synchronisation
	}
}

// The lock stays held until LockAtLeastFor after it was taken, though gocron
// unlocks at once; WithJob gives one job durations of its own.
func TestLockerKeepsLockAtLeastFor(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	locker := newLocker(t, store.Provider("pod-a"), time.Hour, 300*time.Millisecond,
		shedlockgocron.WithJob("fastJob", time.Hour, 0))
	other := store.Provider("pod-b")
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "slowJob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Lock(ctx, "slowJob"); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("second Lock while held: want ErrNotAcquired, got %v", err)
	}
	taken := time.Now()
	if err := lock.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx, shedlock.LockConfig{Name: "slowJob", LockAtMostFor: time.Minute}); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("right after Unlock: want the lock kept for LockAtLeastFor, got %v", err)
	}
	lockedWithin(t, other, "slowJob", 2*time.Second)
	if held := time.Since(taken); held < 300*time.Millisecond {
		t.Errorf("lock free after %v, want at least 300ms", held)
	}

	lock, err = locker.Lock(ctx, "fastJob")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx, shedlock.LockConfig{Name: "fastJob", LockAtMostFor: time.Minute}); err != nil {
		t.Errorf("WithJob(fastJob, _, 0): want the lock free after Unlock, got %v", err)
	}
}

// gocron unlocks with the job's context, which shutdown has cancelled by then:
// the lock is still released, not left until LockAtMostFor.
func TestLockerReleasesAfterShutdown(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	locker := newLocker(t, store.Provider("pod-a"), time.Hour, 0)
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func(ctx context.Context) {
			close(started)
			<-ctx.Done()
		}), gocron.WithName("longJob"))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	<-started
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	lockedWithin(t, store.Provider("pod-b"), "longJob", 2*time.Second)
}

// recordingProvider records the configs it is asked for.
type recordingProvider struct {
	shedlock.LockProvider
	mu   sync.Mutex
	cfgs []shedlock.LockConfig
}

func (p *recordingProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	p.mu.Lock()
	p.cfgs = append(p.cfgs, cfg)
	p.mu.Unlock()
	return p.LockProvider.TryLock(ctx, cfg)
}

func (p *recordingProvider) seen() []shedlock.LockConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]shedlock.LockConfig(nil), p.cfgs...)
}

// The Locker works scheduler-wide and per job, with the job's name as the
// lock's name and the durations set for it.
func TestLockerSchedulerWideAndPerJob(t *testing.T) {
	p := &recordingProvider{LockProvider: shedlocktest.NewMemoryStore().Provider("pod-a")}
	locker := newLocker(t, p, time.Hour, time.Second, shedlockgocron.WithJob("perJob", 2*time.Hour, 0))
	for _, tc := range []struct {
		name      string
		schedOpts []gocron.SchedulerOption
		jobOpts   []gocron.JobOption
		want      shedlock.LockConfig
	}{
		{"scheduler-wide", []gocron.SchedulerOption{gocron.WithDistributedLocker(locker)}, nil,
			shedlock.LockConfig{Name: "wideJob", LockAtMostFor: time.Hour, LockAtLeastFor: time.Second}},
		{"per job", nil, []gocron.JobOption{gocron.WithDistributedJobLocker(locker)},
			shedlock.LockConfig{Name: "perJob", LockAtMostFor: 2 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := gocron.NewScheduler(tc.schedOpts...)
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan struct{})
			_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
				gocron.NewTask(func() { close(ran) }), append(tc.jobOpts, gocron.WithName(tc.want.Name))...)
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			<-ran
			if err := s.Shutdown(); err != nil {
				t.Fatal(err)
			}
			cfgs := p.seen()
			if got := cfgs[len(cfgs)-1]; got != tc.want {
				t.Errorf("TryLock(%+v), want %+v", got, tc.want)
			}
		})
	}
}

// A name that is no valid lock name is an error gocron skips the run on, and it
// is logged: gocron drops lock errors unless the job has a listener.
func TestLockerLogsLockErrors(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := shedlocktest.NewMemoryStore()
	locker := newLocker(t, store.Provider("pod-a"), time.Hour, 0, shedlockgocron.WithLogger(log))
	long := "github.com/acme/orders/internal/jobs.(*Service).CancelExpiredOrders-fm"
	if _, err := locker.Lock(context.Background(), long); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Fatalf("a 70-character name: want ErrInvalidConfig, got %v", err)
	}
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "CancelExpiredOrders") {
		t.Errorf("want an error log naming the lock, got %q", buf.String())
	}
	buf.Reset()
	held, err := locker.Lock(context.Background(), "job")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	if _, err := locker.Lock(context.Background(), "job"); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("want ErrNotAcquired, got %v", err)
	}
	if !strings.Contains(buf.String(), "level=DEBUG") {
		t.Errorf("a held lock: want a debug log, got %q", buf.String())
	}
}

func TestNewLockerRejectsBadInput(t *testing.T) {
	p := shedlocktest.NewMemoryStore().Provider("pod-a")
	for _, tc := range []struct {
		name string
		err  error
		want string // in the error's text
		new  func() (*shedlockgocron.Locker, error)
	}{
		{"nil provider", shedlock.ErrInvalidOption, "shedlockgocron.NewLocker: nil provider", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(nil, time.Minute, 0)
		}},
		{"least above most", shedlock.ErrInvalidConfig, "", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, time.Hour)
		}},
		{"no most", shedlock.ErrInvalidConfig, "", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, 0, 0)
		}},
		{"bad job", shedlock.ErrInvalidConfig, "", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, 0, shedlockgocron.WithJob("job", time.Second, time.Minute))
		}},
		{"job twice", shedlock.ErrInvalidOption, `shedlockgocron.WithJob("job"): given twice`, func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, 0,
				shedlockgocron.WithJob("job", time.Minute, 0), shedlockgocron.WithJob("job", time.Hour, 0))
		}},
		{"nil option", shedlock.ErrInvalidOption, "shedlockgocron.NewLocker: option 0 is nil", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, 0, nil)
		}},
		{"nil second option", shedlock.ErrInvalidOption, "shedlockgocron.NewLocker: option 1 is nil", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, 0, shedlockgocron.WithUnlockTimeout(time.Second), nil)
		}},
		{"unlock timeout", shedlock.ErrInvalidOption, "shedlockgocron.WithUnlockTimeout(0s): must be > 0", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, 0, shedlockgocron.WithUnlockTimeout(0))
		}},
		{"nil logger", shedlock.ErrInvalidOption, "shedlockgocron.WithLogger: nil logger", func() (*shedlockgocron.Locker, error) {
			return shedlockgocron.NewLocker(p, time.Minute, 0, shedlockgocron.WithLogger(nil))
		}},
	} {
		l, err := tc.new()
		if l != nil || !errors.Is(err, tc.err) || (tc.want != "" && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: want %v naming %q, got locker=%v err=%v", tc.name, tc.err, tc.want, l != nil, err)
		}
	}
}
