package integration_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// recorder is a listener that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []shedlock.Event
}

func (r *recorder) OnEvent(_ context.Context, ev shedlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) all() []shedlock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]shedlock.Event(nil), r.events...)
}

func kinds(evs []shedlock.Event) []shedlock.EventKind {
	out := make([]shedlock.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// of returns the events of kind k.
func of(evs []shedlock.Event, k shedlock.EventKind) []shedlock.Event {
	var out []shedlock.Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// listened returns an executor on p whose events r records.
func listened(p shedlock.LockProvider, opts ...shedlock.ExecutorOption) (*shedlock.Executor, *recorder) {
	r := &recorder{}
	ex, _ := newLoggedExecutor(p, append([]shedlock.ExecutorOption{shedlock.WithListener(r)}, opts...)...)
	return ex, r
}

// stopped stops ex, after which its listeners have every event.
func stopped(t *testing.T, ex *shedlock.Executor, r *recorder) []shedlock.Event {
	t.Helper()
	require.NoError(t, ex.Stop(context.Background()))
	return r.all()
}

// assertOneRun checks what every run's events share: one RunID, the job's
// config, times in order.
func assertOneRun(t *testing.T, evs []shedlock.Event, cfg shedlock.LockConfig) {
	t.Helper()
	require.NotEmpty(t, evs)
	for i, ev := range evs {
		assert.Equal(t, evs[0].Run, ev.Run, "event %d (%v) belongs to another run", i, ev.Kind)
		assert.Equal(t, cfg, ev.Config, "event %d (%v)", i, ev.Kind)
		assert.False(t, ev.Time.IsZero(), "event %d (%v) has no time", i, ev.Kind)
		if i > 0 {
			assert.False(t, ev.Time.Before(evs[i-1].Time), "event %d (%v) before the one ahead of it", i, ev.Kind)
		}
	}
}

var ranAndReleased = []shedlock.EventKind{shedlock.EventAttempt, shedlock.EventAcquired, shedlock.EventFinished, shedlock.EventReleased}

func TestListenerAcquiredAndRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, r := listened(newProvider(t))
		const work = 20 * time.Millisecond
		before := time.Now()
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { time.Sleep(work); return nil })
		require.True(t, ran)
		require.NoError(t, err)
		evs := stopped(t, ex, r)
		require.Equal(t, ranAndReleased, kinds(evs))
		assertOneRun(t, evs, job)

		acquired, finished, released := evs[1], evs[2], evs[3]
		margin := min(job.LockAtMostFor/10, 5*time.Second)
		assert.WithinRange(t, acquired.Until, before.Add(job.LockAtMostFor-margin), acquired.Time.Add(job.LockAtMostFor-margin))
		assert.Positive(t, acquired.Duration, "the attempt's time")
		assert.Equal(t, shedlock.TaskOK, finished.Result)
		assert.NoError(t, finished.Err)
		assert.NoError(t, finished.Cause)
		assert.GreaterOrEqual(t, finished.Duration, work, "the task's run time")
		assert.Greater(t, released.Duration, finished.Duration, "held from the attempt's start to the release")
		assert.NoError(t, released.Err)
	})
}

func TestListenerSkippedHeldElsewhere(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		_, err := newProvider(t).TryLock(context.Background(), job)
		require.NoError(t, err)
		ex, r := listened(newProvider(t))
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
		require.False(t, ran)
		require.NoError(t, err)
		evs := stopped(t, ex, r)
		require.Equal(t, []shedlock.EventKind{shedlock.EventAttempt, shedlock.EventSkipped}, kinds(evs))
		assertOneRun(t, evs, job)
		assert.Equal(t, shedlock.SkipHeldElsewhere, evs[1].Skip)
		assert.Equal(t, "held_elsewhere", evs[1].Skip.String())
		assert.Positive(t, evs[1].Duration)
	})
}

func TestListenerSkippedRunningHere(t *testing.T) {
	t.Parallel()
	ex, r := listened(shedlocktest.NewMemoryStore().Provider("a"))
	_, err := ex.Run(context.Background(), job, func(ctx context.Context) error {
		ran, err := ex.Run(ctx, job, func(context.Context) error { return nil })
		assert.False(t, ran)
		return err
	})
	require.NoError(t, err)
	evs := stopped(t, ex, r)
	require.Equal(t, []shedlock.EventKind{
		shedlock.EventAttempt, shedlock.EventAcquired,
		shedlock.EventAttempt, shedlock.EventSkipped, // the inner Run
		shedlock.EventFinished, shedlock.EventReleased,
	}, kinds(evs))
	assert.Equal(t, shedlock.SkipRunningHere, evs[3].Skip)
	assert.NotEqual(t, evs[0].Run, evs[2].Run, "the inner Run is a run of its own")
	assert.Equal(t, evs[2].Run, evs[3].Run)
}

func TestListenerStoreDown(t *testing.T) {
	t.Parallel()
	down := errors.New("dial tcp: connection refused")
	ex, r := listened(failingProvider{err: down})
	_, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	require.ErrorIs(t, err, down)
	evs := stopped(t, ex, r)
	require.Equal(t, []shedlock.EventKind{shedlock.EventAttempt, shedlock.EventStoreError}, kinds(evs))
	assertOneRun(t, evs, job)
	assert.ErrorIs(t, evs[1].Err, down)
}

func TestListenerTaskError(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, r := listened(newProvider(t))
		boom := errors.New("boom")
		_, err := ex.Run(context.Background(), job, func(context.Context) error { return boom })
		require.ErrorIs(t, err, boom)
		evs := stopped(t, ex, r)
		require.Equal(t, ranAndReleased, kinds(evs))
		assertOneRun(t, evs, job)
		assert.Equal(t, shedlock.TaskFailed, evs[2].Result)
		assert.ErrorIs(t, evs[2].Err, boom)
		assert.NoError(t, evs[2].Cause, "the context had not ended")
	})
}

func TestListenerPanic(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, r := listened(newProvider(t))
		_, err := ex.Run(context.Background(), job, func(context.Context) error { panic("kaboom") })
		require.ErrorIs(t, err, shedlock.ErrTaskPanicked)
		evs := stopped(t, ex, r)
		require.Equal(t, ranAndReleased, kinds(evs))
		assert.Equal(t, shedlock.TaskPanicked, evs[2].Result)
		assert.ErrorIs(t, evs[2].Err, shedlock.ErrTaskPanicked)
		assert.ErrorContains(t, evs[2].Err, "kaboom")
	})
}

func TestListenerStop(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, r := listened(newProvider(t))
		running := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := ex.Run(context.Background(), job, func(ctx context.Context) error {
				close(running)
				<-ctx.Done()
				return ctx.Err()
			})
			done <- err
		}()
		<-running
		evs := stopped(t, ex, r)
		require.ErrorIs(t, <-done, context.Canceled)
		require.Equal(t, ranAndReleased, kinds(evs))
		assertOneRun(t, evs, job)
		finished := evs[2]
		assert.Equal(t, shedlock.TaskCancelled, finished.Result)
		assert.ErrorIs(t, finished.Err, context.Canceled)
		assert.ErrorIs(t, finished.Cause, shedlock.ErrStopped)
	})
}

func TestListenerReleaseFailed(t *testing.T) {
	t.Parallel()
	relErr := errors.New("connection reset")
	ex, r := listened(failingProvider{unlockErr: relErr})
	_, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	require.ErrorIs(t, err, relErr)
	evs := stopped(t, ex, r)
	require.Equal(t, []shedlock.EventKind{shedlock.EventAttempt, shedlock.EventAcquired, shedlock.EventFinished,
		shedlock.EventReleaseFailed}, kinds(evs))
	assert.ErrorIs(t, evs[3].Err, relErr)
}

// Without keep-alive, a task that outlives its lock's time sees its context end
// with ErrLockExpired, and the listener hears it before the task's end.
func TestListenerExpired(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, r := listened(newProvider(t))
		cfg := shedlock.LockConfig{Name: "short", LockAtMostFor: 100 * time.Millisecond}
		_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		evs := stopped(t, ex, r)
		require.Equal(t, []shedlock.EventKind{shedlock.EventAttempt, shedlock.EventAcquired, shedlock.EventExpired,
			shedlock.EventFinished, shedlock.EventReleased}, kinds(evs))
		assertOneRun(t, evs, cfg)
		assert.ErrorIs(t, evs[2].Err, shedlock.ErrLockExpired)
		assert.Equal(t, shedlock.TaskFailed, evs[3].Result, "a task cut off by its lock's end failed")
		assert.ErrorIs(t, evs[3].Cause, shedlock.ErrLockExpired)
	})
}

// A listener that blocks holds no lock and delays no run: the lock is free for
// another pod while the listener is still stuck on the run's first event.
func TestSlowListenerHoldsNoLock(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		unblock := make(chan struct{})
		r := &recorder{}
		slow := shedlock.ListenerFunc(func(ctx context.Context, ev shedlock.Event) {
			<-unblock
			r.OnEvent(ctx, ev)
		})
		ex := shedlock.NewExecutor(newProvider(t), shedlock.WithListener(slow))
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
		require.True(t, ran)
		require.NoError(t, err)
		assertFree(t, newProvider(t), job)
		assert.Empty(t, r.all(), "the listener is still blocked")
		close(unblock)
		require.Equal(t, ranAndReleased, kinds(stopped(t, ex, r)))
	})
}

// A listener that panics breaks no run and no other listener; the panic is logged.
func TestPanickingListener(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	bad := shedlock.ListenerFunc(func(context.Context, shedlock.Event) { panic("listener bug") })
	ex, logs := newLoggedExecutor(shedlocktest.NewMemoryStore().Provider("a"),
		shedlock.WithListener(bad), shedlock.WithListener(r))
	ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	require.True(t, ran)
	require.NoError(t, err)
	require.Equal(t, ranAndReleased, kinds(stopped(t, ex, r)))
	assert.Regexp(t, `level=ERROR msg="shedlock: listener panicked.*" lock=job event=attempt panic="listener bug"`, logs.String())
}

// A listener that falls more than the queue's length behind loses events, and
// is told how many: every event is either delivered or counted.
func TestListenerDropsCounted(t *testing.T) {
	t.Parallel()
	unblock := make(chan struct{})
	r := &recorder{}
	slow := shedlock.ListenerFunc(func(ctx context.Context, ev shedlock.Event) {
		<-unblock
		r.OnEvent(ctx, ev)
	})
	ex, logs := newLoggedExecutor(shedlocktest.NewMemoryStore().Provider("a"), shedlock.WithListener(slow))
	const runs = 1100 // four events each: more than the 4096 the queue holds
	for range runs {
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
		require.True(t, ran)
		require.NoError(t, err)
	}
	close(unblock)
	evs := stopped(t, ex, r)
	dropped := of(evs, shedlock.EventDropped)
	require.Len(t, dropped, 1, "one burst of drops, reported once")
	assert.Equal(t, 4*runs, len(evs)-1+int(dropped[0].Dropped), "every event delivered or counted")
	assert.LessOrEqual(t, len(evs)-1, 4097, "at most the queue and the one being delivered")
	assert.Contains(t, logs.String(), "events dropped")
}

func TestWithListenerNil(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"), shedlock.WithListener(nil))
	_, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	assertInvalidOption(t, "Run", err, "WithListener: nil listener")
}

// Skipped runs are logged at the level asked for.
func TestWithSkipLogLevel(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	_, err := store.Provider("other").TryLock(context.Background(), job)
	require.NoError(t, err)
	ex, logs := newLoggedExecutor(store.Provider("a"), shedlock.WithSkipLogLevel(slog.LevelInfo))
	ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	require.False(t, ran)
	require.NoError(t, err)
	assert.Regexp(t, `level=INFO msg="shedlock: skipped, lock held elsewhere" lock=job`, logs.String())
}
