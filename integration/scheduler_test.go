package integration_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// stores gives each executor test two providers on one store: in memory, on
// MySQL/MariaDB and on PostgreSQL.
func stores() map[string]shedlocktest.NewStoreFunc {
	return map[string]shedlocktest.NewStoreFunc{
		"memory": func(t *testing.T) shedlocktest.NewProviderFunc {
			s := shedlocktest.NewMemoryStore()
			n := 0
			return func(t *testing.T) shedlock.LockProvider {
				n++
				return s.Provider("pod-" + string(rune('a'+n)))
			}
		},
		"mysql":    mysqlStore(nil),
		"postgres": postgresStore(pgxClient, "", nil),
	}
}

func forEachStore(t *testing.T, fn func(t *testing.T, newProvider shedlocktest.NewProviderFunc)) {
	t.Parallel()
	for name, newStore := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, newStore(t))
		})
	}
}

// logBuffer collects an executor's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLoggedExecutor(p shedlock.LockProvider, opts ...shedlock.ExecutorOption) (*shedlock.Executor, *logBuffer) {
	logs := &logBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return shedlock.NewExecutor(p, append([]shedlock.ExecutorOption{shedlock.WithExecutorLogger(l)}, opts...)...), logs
}

var job = shedlock.LockConfig{Name: "job", LockAtMostFor: 30 * time.Second}

func assertFree(t *testing.T, p shedlock.LockProvider, cfg shedlock.LockConfig) {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	if err != nil {
		t.Fatalf("lock %q should be free after the run: %v", cfg.Name, err)
	}
	_ = l.Unlock(context.Background())
}

func TestRunSkipsWhenHeldElsewhere(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		other := newProvider(t)
		if _, err := other.TryLock(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		ex, logs := newLoggedExecutor(newProvider(t))
		ran, err := ex.Run(context.Background(), job, func(context.Context) error {
			t.Error("task ran without the lock")
			return nil
		})
		if ran || err != nil {
			t.Fatalf("Run: got (%v, %v), want (false, nil)", ran, err)
		}
		if !strings.Contains(logs.String(), "level=DEBUG") || strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("a skipped run logs at debug only:\n%s", logs)
		}
	})
}

func TestRunReleasesAfterTaskError(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		p := newProvider(t)
		ex, logs := newLoggedExecutor(p)
		boom := errors.New("boom")
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { return boom })
		if !ran || !errors.Is(err, boom) {
			t.Fatalf("Run: got (%v, %v), want (true, boom)", ran, err)
		}
		if !strings.Contains(logs.String(), "task failed") {
			t.Errorf("task error not logged:\n%s", logs)
		}
		assertFree(t, newProvider(t), job)
	})
}

func TestRunReleasesAfterPanic(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, logs := newLoggedExecutor(newProvider(t))
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { panic("kaboom") })
		if !ran || !errors.Is(err, shedlock.ErrTaskPanicked) || !strings.Contains(err.Error(), "kaboom") {
			t.Fatalf("Run: got (%v, %v), want (true, ErrTaskPanicked with the value)", ran, err)
		}
		if !strings.Contains(logs.String(), "kaboom") {
			t.Errorf("panic not logged:\n%s", logs)
		}
		assertFree(t, newProvider(t), job)
	})
}

// The caller's context ends during the task: the task sees it, and the lock is
// still released, with a context of its own.
func TestRunReleasesAfterCallerCancels(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex := shedlock.NewExecutor(newProvider(t))
		ctx, cancel := context.WithCancel(context.Background())
		ran, err := ex.Run(ctx, job, func(taskCtx context.Context) error {
			cancel()
			<-taskCtx.Done()
			return taskCtx.Err()
		})
		if !ran || !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: got (%v, %v), want (true, context.Canceled)", ran, err)
		}
		assertFree(t, newProvider(t), job)
	})
}

// The task's context ends before LockAtMostFor runs out, with ErrLockExpired as
// its cause: past that, another instance may take the lock.
func TestRunTaskDeadlineBeforeLockExpires(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex := shedlock.NewExecutor(newProvider(t))
		cfg := shedlock.LockConfig{Name: "slow", LockAtMostFor: 300 * time.Millisecond}
		start := time.Now()
		_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			deadline, ok := ctx.Deadline()
			if !ok || deadline.After(start.Add(cfg.LockAtMostFor)) {
				t.Errorf("task deadline %v (set %v): want one no later than %v", deadline, ok, start.Add(cfg.LockAtMostFor))
			}
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, shedlock.ErrLockExpired) {
				t.Errorf("cause %v, want ErrLockExpired", cause)
			}
			return ctx.Err()
		})
		// The deadline, checked above, is the promise: when Run returns it has
		// also sent the Unlock, which a slow store answers late.
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run: %v", err)
		}
	})
}

func TestRunStoreFailureDoesNotRunTask(t *testing.T) {
	t.Parallel()
	down := errors.New("dial tcp: connection refused")
	ex, logs := newLoggedExecutor(failingProvider{err: down})
	ran, err := ex.Run(context.Background(), job, func(context.Context) error {
		t.Error("task ran without the lock")
		return nil
	})
	if ran || !errors.Is(err, down) {
		t.Fatalf("Run: got (%v, %v), want (false, the store's error)", ran, err)
	}
	if !strings.Contains(logs.String(), "could not take lock") {
		t.Errorf("store failure not logged:\n%s", logs)
	}
}

func TestRunReportsFailedRelease(t *testing.T) {
	t.Parallel()
	relErr := errors.New("connection reset")
	ex, logs := newLoggedExecutor(failingProvider{unlockErr: relErr})
	ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
	if !ran || !errors.Is(err, relErr) {
		t.Fatalf("Run: got (%v, %v), want (true, the release error)", ran, err)
	}
	if !strings.Contains(logs.String(), "stays held until its lock_until") {
		t.Errorf("failed release not logged as such:\n%s", logs)
	}
}

func TestRunInvalidInput(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	if _, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "x"}, func(context.Context) error { return nil }); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("zero LockAtMostFor: %v", err)
	}
	if _, err := ex.Run(context.Background(), job, nil); !errors.Is(err, shedlock.ErrInvalidJob) || errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("nil task: want ErrInvalidJob, got %v", err)
	}
	if _, err := shedlock.NewExecutor(nil).Run(context.Background(), job, func(context.Context) error { return nil }); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("nil provider: %v", err)
	}
}

// A task that outlived its lock must not be joined by a second run of the same
// name in this process, even though the store would grant the lock again.
func TestRunSameNameNotTwiceInProcess(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	ex := shedlock.NewExecutor(store.Provider("a"))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 50 * time.Millisecond}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ex.Run(context.Background(), cfg, func(context.Context) error {
			close(started)
			<-release // ignores its context: outlives the lock
			return nil
		})
	}()
	<-started
	// Wait until the store would grant the lock again.
	for {
		l, err := store.Provider("probe").TryLock(context.Background(), cfg)
		if err == nil {
			_ = l.Unlock(context.Background())
			break
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	ran, err := ex.Run(context.Background(), cfg, func(context.Context) error { return nil })
	if ran || err != nil {
		t.Fatalf("second Run while the first still runs: got (%v, %v), want (false, nil)", ran, err)
	}
	close(release)
	<-done
}

// failingProvider fails as told.
type failingProvider struct{ err, unlockErr error }

func (f failingProvider) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	if f.err != nil {
		return nil, f.err
	}
	return failingLock(f), nil
}

type failingLock failingProvider

func (f failingLock) Unlock(context.Context) error { return f.unlockErr }
func (f failingLock) Extend(context.Context, time.Duration, time.Duration) error {
	return f.unlockErr
}
