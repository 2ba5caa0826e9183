package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// endedContext returns a context that is already cancelled.
func endedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// With nothing running, Stop returns nil even when its context has already
// ended: there is nothing it gave up waiting for. Many executors, since a
// choice left to chance would pass some of the time.
func TestStopWithEndedContextAndNothingRunning(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	for i := range 100 {
		ex := shedlock.NewExecutor(store.Provider("a"))
		if i%2 == 1 { // one that has run a task, too
			_, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
			require.NoError(t, err)
		}
		require.NoError(t, ex.Stop(endedContext()), "executor %d", i)
	}
}

// A started fixed-delay loop waiting out its delay runs no task: Stop with an
// ended context returns nil, and still waits for the loop's goroutine to end.
func TestStopWithEndedContextAndLoopBetweenRuns(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	for i := range 20 {
		ex := shedlock.NewExecutor(store.Provider("a"))
		cfg := shedlock.LockConfig{Name: "loop", LockAtMostFor: time.Minute}
		ranOnce := make(chan struct{})
		var runs atomic.Int32
		require.NoError(t, ex.FixedDelay(cfg, time.Hour, func(context.Context) error {
			if runs.Add(1) == 1 {
				close(ranOnce)
			}
			return nil
		}))
		ex.Start()
		<-ranOnce
		// The loop's run is over once this executor can run the name itself.
		require.Eventually(t, func() bool {
			ran, err := ex.Run(context.Background(), cfg, func(context.Context) error { return nil })
			return err == nil && ran
		}, 10*time.Second, time.Millisecond)
		require.NoError(t, ex.Stop(endedContext()), "executor %d", i)
	}
}

// Stop that gives up names the tasks it gave up on.
func TestStopNamesTasksStillRunning(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	started, unblock := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ex.Run(context.Background(), job, func(context.Context) error {
			close(started)
			<-unblock // ignores its context
			return nil
		})
	}()
	<-started
	err := ex.Stop(endedContext())
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, `1 tasks still running ("job")`)
	close(unblock)
	<-done
	assert.NoError(t, ex.Stop(context.Background()))
}

// After Stop nothing registers: FixedDelay and Wrap return ErrStopped. WithLock
// does not panic (shutdown may race with registration) but warns, and the job it
// wraps never runs.
func TestRegistrationAfterStop(t *testing.T) {
	t.Parallel()
	ex, logs := newLoggedExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	require.NoError(t, ex.Stop(context.Background()))
	ran := false
	task := func(context.Context) error { ran = true; return nil }

	assert.ErrorIs(t, ex.FixedDelay(job, time.Millisecond, task), shedlock.ErrStopped)
	_, err := ex.Wrap(shedlock.LockConfig{Name: "wrapped", LockAtMostFor: time.Minute}, shedlock.JobFunc(task))
	assert.ErrorIs(t, err, shedlock.ErrStopped)
	var j cron.Job
	require.NotPanics(t, func() { j = ex.WithLock("cron", time.Minute, 0)(shedlock.JobFunc(task)) })
	j.Run()
	ex.Start()
	assert.False(t, ran, "a job registered after Stop ran")
	assert.Regexp(t, `level=WARN msg="shedlock: WithLock after Stop.* lock=cron`, logs.String())
}

// A fixed-delay job on an executor that was never started never runs: Stop says
// so, naming it, rather than letting the job vanish without a word.
func TestStopReportsFixedDelayNeverStarted(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	noop := func(context.Context) error { return nil }

	ex := shedlock.NewExecutor(store.Provider("a"))
	require.NoError(t, ex.FixedDelay(shedlock.LockConfig{Name: "outbox", LockAtMostFor: time.Minute}, time.Second, noop))
	err := ex.Stop(context.Background())
	assert.ErrorIs(t, err, shedlock.ErrNotStarted)
	assert.ErrorContains(t, err, `"outbox"`)

	started := shedlock.NewExecutor(store.Provider("b"))
	require.NoError(t, started.FixedDelay(shedlock.LockConfig{Name: "outbox2", LockAtMostFor: time.Minute}, time.Hour, noop))
	started.Start()
	assert.NoError(t, started.Stop(context.Background()))

	cronOnly := shedlock.NewExecutor(store.Provider("c"))
	_, err = cronOnly.Wrap(shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute}, cron.FuncJob(func() {}))
	require.NoError(t, err)
	assert.NoError(t, cronOnly.Stop(context.Background()), "cron jobs need no Start")
}

// Stop while a Run is taking its lock: the lock is given back and the task
// does not start, since no run starts after Stop.
func TestStopDuringTryLockRunsNoTask(t *testing.T) {
	t.Parallel()
	p := &gatedProvider{entered: make(chan struct{}), proceed: make(chan struct{})}
	ex := shedlock.NewExecutor(p)
	result := make(chan error, 1)
	var taskRan atomic.Bool
	go func() {
		ran, err := ex.Run(context.Background(), job, func(context.Context) error {
			taskRan.Store(true)
			return nil
		})
		if ran {
			err = errors.Join(err, errors.New("Run reported ran"))
		}
		result <- err
	}()
	<-p.entered
	stopped := make(chan error, 1)
	go func() { stopped <- ex.Stop(context.Background()) }()
	// Stop has begun once Run refuses other names.
	require.Eventually(t, func() bool {
		_, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "probe", LockAtMostFor: time.Minute},
			func(context.Context) error { return nil })
		return errors.Is(err, shedlock.ErrStopped)
	}, 10*time.Second, time.Millisecond)
	close(p.proceed)
	require.ErrorIs(t, <-result, shedlock.ErrStopped)
	require.NoError(t, <-stopped)
	assert.False(t, taskRan.Load(), "the task started after Stop")
	assert.Equal(t, int32(1), p.unlocks.Load(), "the lock taken during Stop must be released")
}

// gatedProvider grants every lock, once proceed is closed.
type gatedProvider struct {
	entered, proceed chan struct{}
	unlocks          atomic.Int32
}

func (p *gatedProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if cfg.Name == "probe" {
		return nil, shedlock.ErrNotAcquired
	}
	close(p.entered)
	<-p.proceed // ignores ctx: a store call already on the wire
	return gatedLock{p}, nil
}

type gatedLock struct{ p *gatedProvider }

func (l gatedLock) Unlock(context.Context) error { l.p.unlocks.Add(1); return nil }
func (l gatedLock) Extend(context.Context, time.Duration, time.Duration) error {
	return nil
}
