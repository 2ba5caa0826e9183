package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/inflight"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// errLate stands for an attempt past its fire time's window.
var errLate = inflight.ErrLate

// defaultInFlight bounds an executor's statements in flight when its provider
// does not tell its pool's size, or has no limit (database/sql's default).
const defaultInFlight = 8

// maxBatch is the most attempts one statement carries. Large enough that a
// herd's statements are a small fraction of its attempts; small enough that
// the pods' first batches, each from its own place on the ring (see
// inflight.Slots), are mostly different jobs taken side by side, rather than
// a few large batches that each wait for the rows of the one before.
const maxBatch = 64

// checkedLocker is a provider that can skip what LockConfig.Validate checks,
// for configs the executor has validated (lockcfg.Checked): a config is
// validated once per attempt. The providers of this repository are.
type checkedLocker interface {
	TryLockChecked(ctx context.Context, cfg LockConfig, _ lockcfg.Checked) (Lock, error)
}

// checkedBatchLocker is checkedLocker for batches.
type checkedBatchLocker interface {
	TryLockBatchChecked(ctx context.Context, cfgs []LockConfig, _ lockcfg.Checked) ([]LockResult, error)
}

// checkedExtender is a lock whose Extend can skip the durations' checks, for
// durations the executor has checked.
type checkedExtender interface {
	ExtendChecked(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration, _ lockcfg.Checked) error
}

// lockOne makes one attempt on a validated config.
func (as *attempts) lockOne(ctx context.Context, cfg LockConfig) (Lock, error) {
	if v, ok := as.provider.(checkedLocker); ok {
		return v.TryLockChecked(ctx, cfg, lockcfg.Checked{})
	}
	return as.provider.TryLock(ctx, cfg)
}

// lockBatch makes attempts on validated configs together.
func (as *attempts) lockBatch(ctx context.Context, cfgs []LockConfig) ([]LockResult, error) {
	if v, ok := as.provider.(checkedBatchLocker); ok {
		return v.TryLockBatchChecked(ctx, cfgs, lockcfg.Checked{})
	}
	return as.provider.(BatchLocker).TryLockBatch(ctx, cfgs)
}

// attempts sends an executor's lock attempts to its provider, within its
// bound.
type attempts struct {
	provider    LockProvider
	timeout     time.Duration // WithAcquireTimeout
	maxInFlight int           // WithMaxInFlight; 0: the pool's size
	log         *slog.Logger
	once        sync.Once
	slots       *inflight.Slots[*attempt] // see inFlight
	warnOnce    sync.Once                 // see warnPoolOfOne

	sendMu  sync.Mutex
	sending int           // batches whose statement or releases are under way
	sent    chan struct{} // closed when sending drops to 0; see waitBatches
}

// inFlight returns the bound, sized at its first use.
func (as *attempts) inFlight() *inflight.Slots[*attempt] {
	as.once.Do(func() {
		n := as.maxInFlight
		if ps, ok := as.provider.(PoolSizer); ok && n == 0 {
			n = ps.PoolSize()
		}
		if n <= 0 {
			n = defaultInFlight
		}
		as.warnPoolOfOne()
		batch := 1
		if _, ok := as.provider.(BatchLocker); ok {
			batch = maxBatch
		}
		as.slots = inflight.New[*attempt](n, n-1, batch, rand.Uint64())
	})
	return as.slots
}

// unlock releases lock within the bound of releases and extensions, never
// behind an attempt.
func (as *attempts) unlock(ctx context.Context, lock Lock) error {
	done, err := as.inFlight().AcquireHeld(ctx)
	if err != nil {
		return fmt.Errorf("%w: wait for one of the executor's statements in flight: %w", ErrReleaseFailed, err)
	}
	defer done()
	return lock.Unlock(ctx)
}

// unlockSucceeded releases a CatchUp run's lock and records its fire time, as
// unlock releases a lock.
func (as *attempts) unlockSucceeded(ctx context.Context, lock FireLock, leastFor time.Duration) error {
	done, err := as.inFlight().AcquireHeld(ctx)
	if err != nil {
		return fmt.Errorf("%w: wait for one of the executor's statements in flight: %w", ErrReleaseFailed, err)
	}
	defer done()
	return lock.UnlockSucceeded(ctx, leastFor)
}

// tryFire takes a CatchUp run's lock for its fire time, within the acquire
// timeout. Such attempts are few, one per fire time and check: each goes
// alone, never in a batch, but within the bound of attempts, so that however
// many hang on rows another transaction holds, releases and extensions keep
// their places.
func (as *attempts) tryFire(ctx context.Context, cfg LockConfig, fire time.Time) (Lock, error) {
	fl, ok := as.provider.(FireLocker)
	if !ok {
		return nil, fmt.Errorf("%w: lock %q: CatchUp needs a provider that records fire times (FireLocker); %T does not",
			ErrInvalidOption, cfg.Name, as.provider)
	}
	ctx, cancel := context.WithTimeout(ctx, as.timeout)
	defer cancel()
	s := as.inFlight()
	g, ok := s.TryAcquire(inflight.Alone)
	if !ok {
		var err error
		if g, err = s.Acquire(ctx, inflight.Alone, nil, 0, time.Time{}, time.Time{}); err != nil {
			return nil, fmt.Errorf("shedlock: lock %q: wait for one of the executor's %d attempts in flight: %w", cfg.Name, s.Limit, err)
		}
	}
	defer g.Done()
	l, err := fl.TryLockFire(ctx, cfg, fire)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// extend extends lock as unlock releases it.
func (as *attempts) extend(ctx context.Context, lock Lock, most, least time.Duration) error {
	done, err := as.inFlight().AcquireHeld(ctx)
	if err != nil {
		return fmt.Errorf("shedlock: wait for one of the executor's statements in flight: %w", err)
	}
	defer done()
	if c, ok := lock.(checkedExtender); ok {
		return c.ExtendChecked(ctx, most, least, lockcfg.Checked{})
	}
	return lock.Extend(ctx, most, least)
}

// try takes the lock of cfg, whose name is key to the store, within the acquire timeout (WithAcquireTimeout), or
// the caller's deadline if it is sooner: a cron or fixed-delay run has no
// deadline of its own, and a store that hangs must not hold it for good. It
// waits for a slot first, and gives up with errLate once end, the window of
// its fire time, has passed (zero: no window). The attempt's context is made
// once it has its slot: at a herd's tick, every waiting attempt costs its pod
// only a timer.
func (as *attempts) try(ctx context.Context, cfg LockConfig, key string, kind inflight.Kind, end time.Time) (Lock, error) {
	deadline := time.Now().Add(as.timeout)
	s := as.inFlight()
	if g, ok := s.TryAcquire(kind); ok { // no queue: alone, at once
		defer g.Done()
		return as.alone(ctx, cfg, end, deadline)
	}
	a := &attempt{ctx: ctx, cfg: cfg, end: end, deadline: deadline, answer: make(chan LockResult, 1)}
	g, err := s.Acquire(ctx, kind, a, ringKey(key), end, deadline)
	switch {
	case errors.Is(err, errLate):
		return nil, errLate
	case err != nil:
		return nil, fmt.Errorf("shedlock: lock %q: wait for one of the executor's %d attempts in flight: %w", cfg.Name, s.Limit, err)
	case g.Rider:
		return as.await(a)
	}
	if len(g.Riders) == 0 {
		defer g.Done()
		return as.alone(ctx, cfg, end, deadline)
	}
	// The batch is sent from a goroutine of its own, so that its leader, like
	// each rider, returns when its own context ends or its own deadline
	// passes. Stop waits for it (waitBatches).
	as.beginBatch()
	go func() {
		defer as.endBatch()
		defer g.Done()
		as.sendBatch(append(g.Riders, a))
	}()
	return as.await(a)
}

// alone sends one attempt that has its slot, unless its window has passed.
func (as *attempts) alone(ctx context.Context, cfg LockConfig, end, deadline time.Time) (Lock, error) {
	if !end.IsZero() && !time.Now().Before(end) {
		return nil, errLate
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return as.lockOne(ctx, cfg)
}

// ringKey is a name's place on the ring of attempts (see inflight.Slots),
// from its key (jobname.Key): the same on every instance. FNV-1a.
func ringKey(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return h
}

// warnPoolOfOne warns, once, of a provider whose pool has one connection. The
// bound keeps a place for releases and extensions beside the attempts, but
// the pool cannot: an attempt that hangs on a row another transaction holds
// keeps the only connection, and a held lock's release or extension waits
// for it, up to the acquire timeout. Leaving attempts no place at all would
// run no job, so the executor says so instead, at construction and at its
// first attempt (the pool may be sized in between).
func (as *attempts) warnPoolOfOne() {
	ps, ok := as.provider.(PoolSizer)
	if !ok || ps.PoolSize() != 1 {
		return
	}
	as.warnOnce.Do(func() {
		as.log.Warn("shedlock: the provider's pool has one connection: an attempt that hangs on a row another " +
			"transaction holds keeps it, and a held lock's release or extension waits for it; " +
			"give the pool at least 2 connections (e.g. db.SetMaxOpenConns(2))")
	})
}

// attempt is one run's try for its lock while it waits for a slot, and the
// answer its batch's leader leaves it.
type attempt struct {
	ctx      context.Context
	cfg      LockConfig
	end      time.Time // the window's end; zero: none
	deadline time.Time // its acquire timeout's end: it leaves its batch then
	answer   chan LockResult

	mu    sync.Mutex
	gone  bool      // its caller left before the answer: a lock taken for it is released
	batch *batchRun // the batch sending it, once sent
}

// batchRun is one batch statement under way. Its context ends at the latest
// of its members' deadlines, or as soon as every member has left: nobody
// wants what it would take.
type batchRun struct {
	members atomic.Int32 // members still waiting for the answer
	cancel  context.CancelFunc
}

// leave counts a member out; the last one ends the statement.
func (b *batchRun) leave() {
	if b.members.Add(-1) == 0 {
		b.cancel()
	}
}

// join makes b the batch sending a, or counts a out of it at once if its
// caller has already left.
func (a *attempt) join(b *batchRun) {
	a.mu.Lock()
	gone := a.gone
	if !gone {
		a.batch = b
	}
	a.mu.Unlock()
	if gone {
		b.leave()
	}
}
