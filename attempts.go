package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock/internal/inflight"
)

// A herd is many jobs firing at one tick on many pods, draining at the store's
// pace. An attempt gives up once its fire time's window has passed (no tick
// runs twice), and a pod keeps its statements within its pool, releases and
// extensions ahead of attempts (none starved, no connection past the pool).

type fireTimeKey struct{}

// ContextWithFireTime returns ctx carrying fire, the time the run is due: the
// cron tick it belongs to. Run (and WithLock and Wrap jobs, which are given the
// time cron called them) then gives up an attempt made more than half of
// LockAtLeastFor after fire, skipping the run (SkipLate, and (false, nil)).
//
// Why: an instance that takes the lock at a tick holds it for at least
// LockAtLeastFor. A later attempt, from a pod whose herd of jobs took that
// long to drain, could take the lock after that tick's run released it, and
// run the tick twice. The window is half of LockAtLeastFor after fire; the
// other half covers instances whose clocks are apart, and the time a statement
// waits in the store. With LockAtLeastFor 0 there is no window: the lock alone
// decides, as without a fire time.
//
// The limit: a job is skipped at a tick if no instance reaches it within the
// window. Each pod sends first its attempts on the jobs it won at their last
// attempt, then the others in random order (see WithMaxInFlight): a job that
// has run before is tried early by its last winner, and a new one on average
// 1/(P+1) of the way through a pod's drain with P pods; a pod alone must drain
// within the window.
func ContextWithFireTime(ctx context.Context, fire time.Time) context.Context {
	return context.WithValue(ctx, fireTimeKey{}, fire)
}

// FireTimeFromContext returns the fire time ContextWithFireTime put in ctx.
func FireTimeFromContext(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(fireTimeKey{}).(time.Time)
	return t, ok
}

// windowEnd is when an attempt of cfg in ctx becomes late; ok is false when
// it cannot.
func windowEnd(ctx context.Context, cfg LockConfig) (end time.Time, ok bool) {
	fire, ok := FireTimeFromContext(ctx)
	if !ok || cfg.LockAtLeastFor <= 0 {
		return time.Time{}, false
	}
	return fire.Add(cfg.LockAtLeastFor / 2), true
}

// errLate stands for an attempt past its fire time's window.
var errLate = inflight.ErrLate

// PoolSizer is a LockProvider that can tell the most connections its client
// opens at once. The SQL providers report their *sql.DB's MaxOpenConnections
// (0: no limit), shedlockredis its client's PoolSize.
type PoolSizer interface {
	PoolSize() int
}

// defaultInFlight bounds an executor's statements in flight when its provider
// does not tell its pool's size, or has no limit (database/sql's default).
const defaultInFlight = 8

// WithMaxInFlight bounds the statements of the executor's locks in flight at
// once to n: attempts, releases and extensions. By default n is the provider's
// pool size (PoolSizer), read at the first attempt, or 8 when it has none.
// Releases and extensions go ahead of the pod's waiting attempts: one waits at
// most for a statement in flight to end. Then come waiting attempts on names
// whose last attempt here took the lock, then the others, each in random
// order: at a tick, each job gets an early attempt from its last winner, and a
// job no pod has won yet from some pod. n must be >= 1.
//
// Size it as the pool: with N pods of M jobs each firing at one tick, each pod
// opens at most n connections, the store sees at most N×n, and the tick drains
// in about N×M statements at the store's rate; the store must allow N×n
// connections besides its other clients. An executor bounds only its own
// statements: tasks that use the same pool, and other executors on it, add to it.
func WithMaxInFlight(n int) ExecutorOption {
	return func(o *executorOptions) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxInFlight(%d): must be >= 1", ErrInvalidOption, n)
		}
		o.maxInFlight = n
		return nil
	}
}

// inFlight returns the executor's bound, sized at its first use.
func (e *Executor) inFlight() *inflight.Slots {
	e.slotsOnce.Do(func() {
		n := e.maxInFlight
		if ps, ok := e.provider.(PoolSizer); ok && n == 0 {
			n = ps.PoolSize()
		}
		if n <= 0 {
			n = defaultInFlight
		}
		e.slots = inflight.New(n)
	})
	return e.slots
}

// tryLock takes the lock within the acquire timeout (WithAcquireTimeout), or
// the caller's deadline if it is sooner: a cron or fixed-delay run has no
// deadline of its own, and a store that hangs must not hold it for good. It
// waits for a slot first, and gives up with errLate once the window of its
// fire time has passed. The attempt's context is made once it has its slot:
// at a herd's tick, every waiting attempt costs its pod only a timer.
func (e *Executor) tryLock(ctx context.Context, cfg LockConfig, kind inflight.Kind) (Lock, error) {
	deadline := time.Now().Add(e.acquireTimeout)
	end, windowed := windowEnd(ctx, cfg)
	s := e.inFlight()
	done, err := s.Acquire(ctx, kind, end, deadline)
	if err != nil {
		if errors.Is(err, errLate) {
			return nil, errLate
		}
		return nil, fmt.Errorf("shedlock: lock %q: wait for one of the executor's %d statements in flight: %w", cfg.Name, s.Size, err)
	}
	defer done()
	if windowed && !time.Now().Before(end) {
		return nil, errLate
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return e.provider.TryLock(ctx, cfg)
}

// unlock releases lock ahead of every waiting attempt.
func (e *Executor) unlock(ctx context.Context, lock Lock) error {
	done, err := e.inFlight().Acquire(ctx, inflight.Held, time.Time{}, time.Time{})
	if err != nil {
		return fmt.Errorf("%w: wait for a statement slot: %w", ErrReleaseFailed, err)
	}
	defer done()
	return lock.Unlock(ctx)
}

// extendLock extends the lease's lock ahead of every waiting attempt.
func (l *lease) extendLock(ctx context.Context, most, least time.Duration) error {
	if l.hooks.slots != nil {
		done, err := l.hooks.slots.Acquire(ctx, inflight.Held, time.Time{}, time.Time{})
		if err != nil {
			return fmt.Errorf("shedlock: extend %q: wait for a statement slot: %w", l.cfg.Name, err)
		}
		defer done()
	}
	return l.lock.Extend(ctx, most, least)
}
