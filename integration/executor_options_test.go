package integration_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// NewExecutor cannot return an error, so a bad option or a nil provider is kept
// and reported, as ErrInvalidOption naming the option, by every call that could
// start a job: Run, Wrap and FixedDelay return it, WithLock panics with it. No
// task runs. Stop has nothing to stop.
func TestExecutorInvalidOptions(t *testing.T) {
	t.Parallel()
	p := shedlocktest.NewMemoryStore().Provider("a")
	tests := []struct {
		name string
		ex   *shedlock.Executor
		want string
	}{
		{"nil logger", shedlock.NewExecutor(p, shedlock.WithExecutorLogger(nil)), "WithExecutorLogger: nil logger"},
		{"zero release timeout", shedlock.NewExecutor(p, shedlock.WithReleaseTimeout(0)), "WithReleaseTimeout(0s): must be > 0"},
		{"negative release timeout", shedlock.NewExecutor(p, shedlock.WithReleaseTimeout(-time.Second)), "WithReleaseTimeout(-1s): must be > 0"},
		{"nil option", shedlock.NewExecutor(p, nil), "option 0 is nil"},
		{"nil provider", shedlock.NewExecutor(nil), "nil LockProvider"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := func(context.Context) error {
				t.Error("a task ran on an executor made with an invalid option")
				return nil
			}
			ran, err := tc.ex.Run(context.Background(), job, task)
			assert.False(t, ran)
			assertInvalidOption(t, "Run", err, tc.want)
			_, err = tc.ex.Wrap(job, shedlock.JobFunc(task))
			assertInvalidOption(t, "Wrap", err, tc.want)
			assertInvalidOption(t, "FixedDelay", tc.ex.FixedDelay(job, time.Second, task), tc.want)
			var panicked any
			func() {
				defer func() { panicked = recover() }()
				tc.ex.WithLock("cron", time.Minute, 0)
			}()
			err, _ = panicked.(error)
			assertInvalidOption(t, "WithLock's panic", err, tc.want)
			tc.ex.Start()
			assert.NoError(t, tc.ex.Stop(context.Background()))
		})
	}
}

func assertInvalidOption(t *testing.T, call string, err error, want string) {
	t.Helper()
	assert.ErrorIs(t, err, shedlock.ErrInvalidOption, call)
	assert.ErrorContains(t, err, want, call)
}

// WithReleaseTimeout bounds the release: the Unlock context's deadline is the one set.
func TestWithReleaseTimeoutBoundsRelease(t *testing.T) {
	t.Parallel()
	p := &deadlineProvider{}
	ex := shedlock.NewExecutor(p, shedlock.WithReleaseTimeout(50*time.Millisecond))
	before := time.Now()
	_, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, p.hasDeadline, "Unlock got a context without a deadline")
	assert.WithinRange(t, p.deadline, before, before.Add(50*time.Millisecond).Add(time.Second),
		"the release deadline follows WithReleaseTimeout(50ms), not the 10s default")
}

// deadlineProvider records the deadline Unlock is given.
type deadlineProvider struct {
	deadline    time.Time
	hasDeadline bool
}

func (p *deadlineProvider) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	return deadlineLock{p}, nil
}

type deadlineLock struct{ p *deadlineProvider }

func (l deadlineLock) Unlock(ctx context.Context) error {
	l.p.deadline, l.p.hasDeadline = ctx.Deadline()
	return nil
}
func (l deadlineLock) Extend(context.Context, time.Duration, time.Duration) error { return nil }

// A JobFunc handed to cron without WithLock has no caller to return its error
// to: Run logs it with slog.Default() at error level. Not parallel: it replaces
// the process's default logger.
func TestJobFuncRunLogsError(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	var j cron.Job = shedlock.JobFunc(func(context.Context) error { return errors.New("orders table is locked") })
	j.Run()
	assert.Regexp(t, `level=ERROR msg="shedlock: job failed" error="orders table is locked"`, logs.String())

	logs.Reset()
	shedlock.JobFunc(func(context.Context) error { return nil }).Run()
	assert.Empty(t, logs.String(), "a job that succeeds logs nothing")
}
