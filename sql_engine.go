package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// sqlStore is one SQL store's statements. Each reports whether it changed the
// row as asked: false from release or extend means the row is not this token's.
// Every method runs the store's first-use checks before its first statement.
type sqlStore interface {
	insert(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error)
	update(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error)
	release(ctx context.Context, a sqlArgs, leastFor time.Duration) (bool, error)
	extend(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error)
	// nameKey checks that the name column stores name exactly and returns what
	// the column's collation makes of it: two names with one key are one row.
	nameKey(ctx context.Context, name string) (string, error)
}

// sqlArgs are a lock's name and an acquisition's token as statement arguments
// (both strings). Each is converted to an interface value once, the name when
// the provider first sees it and the token when it is made, rather than for
// every statement: each conversion is an allocation.
type sqlArgs struct {
	name, token any
}

// upsertStore is a sqlStore whose insert also takes an existing row when its
// lock has run out (INSERT ... ON CONFLICT DO UPDATE ... WHERE): a false from
// it means the lock is held, and no UPDATE need follow.
type upsertStore interface {
	sqlStore
	upserts()
}

// sqlEngine is the lock algorithm every SQL provider shares: insert a name's row
// once, then take it with one conditional UPDATE; release and extend only the
// acquisition whose token is in locked_by.
type sqlEngine struct {
	store    sqlStore
	lockedBy string // the provider's unique owner; each token starts with it
	log      *slog.Logger
	retries  int           // release attempts after the first
	backoff  time.Duration // wait before the first retry; doubled each time
	names    *nameCache
	acquired atomic.Uint64 // acquisitions so far, for tokens
}

func newSQLEngine(o providerOptions, store sqlStore) *sqlEngine {
	return &sqlEngine{
		store: store, lockedBy: o.lockedBy, log: o.logger,
		retries: o.releaseRetries, backoff: o.releaseBackoff,
		names: newNameCache(nameCacheSize),
	}
}

// token is what one acquisition writes to locked_by: the provider's owner and a
// number no other acquisition of this provider has. Release and extend match it
// exactly, so an old handle never touches a newer acquisition, whatever the
// column's collation makes of names and owners (digits compare as themselves in
// every collation).
func (e *sqlEngine) token() string {
	var n [20]byte
	return e.lockedBy + "." + string(strconv.AppendUint(n[:0], e.acquired.Add(1), 10))
}

// tryLock makes one attempt. In steady state it is a single UPDATE. The first time
// the provider sees a name it checks the name against the column and inserts the
// row; it inserts again once a failed UPDATE has not seen the row for mostFor, so
// that a row deleted by hand is re-created within one mostFor.
func (e *sqlEngine) tryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	mostFor := ceilMillis(cfg.LockAtMostFor)
	st, ok := e.names.get(cfg.Name)
	if !ok {
		key, err := e.store.nameKey(ctx, cfg.Name)
		if err != nil {
			return nil, fmt.Errorf("shedlock: acquire %q: %w", cfg.Name, err)
		}
		if st, err = e.names.add(cfg.Name, key); err != nil {
			return nil, err
		}
	}
	args := sqlArgs{name: st.arg, token: e.token()}
	now := time.Now()
	if st.needsInsert(now, mostFor) {
		ok, err := e.store.insert(ctx, args, mostFor)
		if err != nil {
			return nil, fmt.Errorf("shedlock: acquire %q: %w", cfg.Name, err)
		}
		st.seen(now)
		if ok {
			return e.grant(cfg, args), nil
		}
		if _, upserts := e.store.(upsertStore); upserts {
			return nil, ErrNotAcquired
		}
	}
	ok, err := e.store.update(ctx, args, mostFor)
	if err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: %w", cfg.Name, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	st.seen(now)
	return e.grant(cfg, args), nil
}

func (e *sqlEngine) grant(cfg LockConfig, args sqlArgs) *sqlLock {
	l := &sqlLock{e: e, name: cfg.Name, args: args, leastFor: ceilMillis(cfg.LockAtLeastFor), turn: make(chan struct{}, 1)}
	return l
}

// ceilMillis rounds d up to a whole millisecond: stores keep lock times to the
// millisecond, and a lock must never end earlier than asked. Within a
// millisecond of the longest Duration, where rounding up would wrap around to a
// negative duration and free the lock at once, it rounds down instead.
func ceilMillis(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		if d > math.MaxInt64-time.Millisecond {
			return d - r
		}
		d += time.Millisecond - r
	}
	return d
}

// sqlLock is one acquisition by a SQL provider.
type sqlLock struct {
	e    *sqlEngine
	name string
	args sqlArgs       // the name and this acquisition's token
	turn chan struct{} // one Unlock or Extend at a time; waiting ends with ctx

	leastFor time.Duration // guarded by turn
	done     bool          // released, or found lost; guarded by turn
}

func (l *sqlLock) take(ctx context.Context) error {
	select {
	case l.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shedlock: lock %q: %w", l.name, context.Cause(ctx))
	}
}

func (l *sqlLock) give() { <-l.turn }

// Unlock releases the lock, keeping it until LockAtLeastFor after it was taken. A
// failed statement is retried; when every try fails the error wraps
// ErrReleaseFailed and the lock stays until its lock_until.
func (l *sqlLock) Unlock(ctx context.Context) error {
	if err := l.take(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrReleaseFailed, err)
	}
	defer l.give()
	if l.done {
		return ErrLockLost
	}
	wait := l.e.backoff
	var err error
	for attempt := 0; ; attempt++ {
		var ours bool
		ours, err = l.e.store.release(ctx, l.args, l.leastFor)
		if err == nil {
			l.done = true
			if !ours {
				return ErrLockLost
			}
			return nil
		}
		if attempt >= l.e.retries || ctx.Err() != nil {
			break
		}
		l.e.log.WarnContext(ctx, "shedlock: release failed, retrying",
			"lock", l.name, "attempt", attempt+1, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait *= 2
	}
	return fmt.Errorf("%w: lock %q: %w", ErrReleaseFailed, l.name, errors.Join(err, ctx.Err()))
}

// Extend moves the lock's end to now + lockAtMostFor while it is still ours and
// unexpired; ErrLockLost otherwise. lockAtLeastFor replaces the minimum hold that
// Unlock keeps, still counted from when the lock was taken.
func (l *sqlLock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	if err := l.e.checkDurations(l.name, lockAtMostFor, lockAtLeastFor); err != nil {
		return err
	}
	if err := l.take(ctx); err != nil {
		return err
	}
	defer l.give()
	if l.done {
		return ErrLockLost
	}
	ours, err := l.e.store.extend(ctx, l.args, ceilMillis(lockAtMostFor))
	if err != nil {
		return fmt.Errorf("shedlock: extend %q: %w", l.name, err)
	}
	if !ours {
		l.done = true
		return ErrLockLost
	}
	l.leastFor = ceilMillis(lockAtLeastFor)
	return nil
}

// checkDurations validates an Extend's durations, and the store's limit on
// lock_until where it has one.
func (e *sqlEngine) checkDurations(name string, mostFor, leastFor time.Duration) error {
	if err := validateDurations(name, mostFor, leastFor); err != nil {
		return err
	}
	if c, ok := e.store.(interface {
		checkEnd(name string, mostFor time.Duration) error
	}); ok {
		return c.checkEnd(name, mostFor)
	}
	return nil
}
