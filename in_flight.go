package shedlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock/internal/inflight"
)

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

// maxBatch is the most attempts one statement carries. Large enough that a
// herd's statements are a small fraction of its attempts; small enough that
// the pods' first batches, each from its own place on the ring (see
// inflight.Slots), are mostly different jobs taken side by side, rather than
// a few large batches that each wait for the rows of the one before.
const maxBatch = 64

// WithMaxInFlight bounds the executor's statements in flight at once to n. By
// default n is the provider's pool size (PoolSizer), read at the first
// attempt, or 8 when it has none. Attempts, in batches, alone or for a
// CatchUp run's fire time, use at most n-1 of them (1 when n is 1), so that
// one connection stays free for releases and extensions, which
// never wait for attempts: a lock this instance holds is kept and freed in one
// statement's time, even while every attempt hangs on rows another
// transaction holds; they go before waiting attempts when a statement ends,
// and keep to the bound of n too, so that a herd's winners releasing at once do
// not open a connection each. With n = 1, one attempt and one release or
// extension may be in flight. n must be >= 1.
//
// Attempts beyond the bound wait, and go together: when one ends, the next
// takes the queue with it, up to 64 attempts, in one batch statement where
// the provider can (BatchLocker), else one at a time. Attempts on names whose
// last attempt here took the lock go first, then the others, each instance
// going round the names from a place of its own, so that at a tick the
// instances' first batches are mostly different jobs. An attempt that finds
// a slot free and no queue goes at once, alone.
//
// Size it as the pool: with N pods each firing M jobs at one tick, each pod
// opens at most n connections, and the store sees about N×M/64 batch
// statements rather than N×M; the store must allow N×n connections besides
// its other clients. An executor bounds only its own statements: tasks that
// use the same pool, and other executors on it, add to it.
func WithMaxInFlight(n int) ExecutorOption {
	return func(o *executorOptions) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxInFlight(%d): must be >= 1", ErrInvalidOption, n)
		}
		o.maxInFlight = n
		return nil
	}
}

// validLocker is a provider that can skip what LockConfig.Validate checks,
// for configs the executor has validated: a config is validated once per
// attempt. The SQL providers are.
type validLocker interface {
	tryLockValid(ctx context.Context, cfg LockConfig) (Lock, error)
	tryLockBatchValid(ctx context.Context, cfgs []LockConfig) ([]LockResult, error)
}

// lockOne makes one attempt on a validated config.
func (as *attempts) lockOne(ctx context.Context, cfg LockConfig) (Lock, error) {
	if v, ok := as.provider.(validLocker); ok {
		return v.tryLockValid(ctx, cfg)
	}
	return as.provider.TryLock(ctx, cfg)
}

// lockBatch makes attempts on validated configs together.
func (as *attempts) lockBatch(ctx context.Context, cfgs []LockConfig) ([]LockResult, error) {
	if v, ok := as.provider.(validLocker); ok {
		return v.tryLockBatchValid(ctx, cfgs)
	}
	return as.provider.(BatchLocker).TryLockBatch(ctx, cfgs)
}

// attempt is one run's try for its lock while it waits for a slot, and the
// answer its batch's leader leaves it.
type attempt struct {
	ctx    context.Context
	cfg    LockConfig
	end    time.Time // the window's end; zero: none
	answer chan LockResult

	mu   sync.Mutex
	gone bool // its caller left before the answer: a lock taken for it is released
}

// attempts sends an executor's lock attempts to its provider, within its
// bound.
type attempts struct {
	provider    LockProvider
	timeout     time.Duration // WithAcquireTimeout
	maxInFlight int           // WithMaxInFlight; 0: the pool's size
	once        sync.Once
	slots       *inflight.Slots[*attempt] // see inFlight
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
	a := &attempt{ctx: ctx, cfg: cfg, end: end, answer: make(chan LockResult, 1)}
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
	// each rider, returns when its own context ends.
	go func() {
		defer g.Done()
		as.sendBatch(append(g.Riders, a), deadline)
	}()
	return as.await(a)
}

// await waits for the answer to a, or for its caller's context to end. A
// caller that leaves is not answered: a lock its batch takes for it after is
// released (see answer).
func (as *attempts) await(a *attempt) (Lock, error) {
	select {
	case r := <-a.answer:
		return r.Lock, r.Err
	case <-a.ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case r := <-a.answer: // answered as it left
		return r.Lock, r.Err
	default:
	}
	a.gone = true
	return nil, fmt.Errorf("shedlock: lock %q: left its batch's attempt, still under way: %w", a.cfg.Name, context.Cause(a.ctx))
}

// answer gives a its result, or, if its caller has left, releases the lock
// the result holds, so that no lock is held for a run that will not happen.
func (as *attempts) answer(a *attempt, r LockResult) {
	if as.deliver(a, r) {
		as.releaseLeft(a, r.Lock)
	}
}

// deliver gives a its result, unless its caller has left with a lock to
// release: then it reports true.
func (as *attempts) deliver(a *attempt, r LockResult) (release bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.gone {
		a.answer <- r // buffered: one answer per attempt
	}
	return a.gone && r.Lock != nil
}

// releaseLeft releases a lock taken for an attempt whose caller had left; if
// it fails, the lock ends at its LockAtMostFor, as any lost release's.
func (as *attempts) releaseLeft(a *attempt, lock Lock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), as.timeout)
	defer cancel()
	_ = as.unlock(ctx, lock)
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

// sendBatch sends the attempts in one batch, those still in their window and
// wanted, and answers each. The statement runs under a context of its own,
// bounded by deadline: one caller that gives up must not fail the others'
// attempts.
func (as *attempts) sendBatch(batch []*attempt, deadline time.Time) {
	now := time.Now()
	sent := batch[:0]
	cfgs := make([]LockConfig, 0, len(batch))
	for _, a := range batch {
		switch {
		case !a.end.IsZero() && !now.Before(a.end):
			as.answer(a, LockResult{Err: errLate})
		case a.ctx.Err() != nil:
			as.answer(a, LockResult{Err: context.Cause(a.ctx)})
		default:
			sent = append(sent, a)
			cfgs = append(cfgs, a.cfg)
		}
	}
	if len(sent) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(sent[0].ctx), deadline)
	defer cancel()
	if len(sent) == 1 {
		l, err := as.lockOne(ctx, sent[0].cfg)
		as.answer(sent[0], LockResult{Lock: l, Err: err})
		return
	}
	results, err := as.lockBatch(ctx, cfgs)
	if err == nil && len(results) != len(sent) {
		err = fmt.Errorf("shedlock: TryLockBatch returned %d results for %d attempts", len(results), len(sent))
	}
	var left []int // attempts whose callers left, with a lock to release after every answer
	for i, a := range sent {
		switch {
		case err != nil:
			as.answer(a, LockResult{Err: err})
		case results[i].Lock == nil && results[i].Err == nil:
			as.answer(a, LockResult{Err: fmt.Errorf("shedlock: lock %q: TryLockBatch returned neither a lock nor an error", a.cfg.Name)})
		case as.deliver(a, results[i]):
			left = append(left, i)
		}
	}
	for _, i := range left {
		as.releaseLeft(sent[i], results[i].Lock)
	}
}
