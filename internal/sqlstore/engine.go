package sqlstore

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Config is what a provider's options give the engine.
type Config struct {
	// LockedBy is the provider's unique owner; each token starts with it.
	LockedBy string
	Logger   *slog.Logger
	// Retries is how often a failed release is tried again; Backoff the wait
	// before the first retry, doubled each time.
	Retries int
	Backoff time.Duration
	// CheckDurations validates an Extend's durations as the contract does.
	CheckDurations func(name string, mostFor, leastFor time.Duration) error
	// HonoursContext: the driver ends a statement when its context ends, even
	// on a dead connection (HonoursContext), so the lock's statements need no
	// goroutine of their own to be bounded.
	HonoursContext bool
}

// clockMargin covers the gap between this process's clock, used to check a
// lock's end against Caps.LatestLockEnd, and the database's.
const clockMargin = 24 * time.Hour

// Engine is the lock algorithm every SQL provider shares: take a name's row with
// one upsert where the store has one (Caps.Upserts), else insert it once and
// take it with one conditional UPDATE; release and extend only the acquisition
// whose token is in locked_by.
type Engine struct {
	store    Store
	caps     Caps
	cfg      Config
	names    *nameCache
	acquired atomic.Uint64 // acquisitions so far, for tokens
}

// NewEngine returns the engine on store.
func NewEngine(store Store, cfg Config) *Engine {
	return &Engine{store: store, caps: store.Caps(), cfg: cfg, names: newNameCache(nameCacheSize)}
}

// LockedBy is the owner the provider writes to locked_by, before the number
// each acquisition adds.
func (e *Engine) LockedBy() string { return e.cfg.LockedBy }

// EnsureTable creates the store's table if it does not exist.
func (e *Engine) EnsureTable(ctx context.Context) error { return e.store.EnsureTable(ctx) }

// closeWait bounds Close: database/sql closes a prepared statement only once
// no connection runs it, and one hung on a dead connection may run it for good.
const closeWait = 5 * time.Second

// Close releases the store's prepared statements, waiting at most closeWait;
// statements still running on a hung connection are closed when it ends.
func (e *Engine) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	_, err := bounded(ctx, func(context.Context) (bool, error) { return true, e.store.Close() })
	return err
}

// CheckEnd refuses a LockAtMostFor whose lock_until the store cannot hold.
func (e *Engine) CheckEnd(name string, mostFor time.Duration) error {
	last := e.caps.LatestLockEnd
	if last.IsZero() {
		return nil
	}
	if end := time.Now().Add(mostFor); end.After(last.Add(-clockMargin)) {
		return fmt.Errorf("%w: lock %q: LockAtMostFor %v puts lock_until past %s, "+
			"the end of what the lock_until column holds (less a day for clock skew)",
			lockerr.InvalidConfig, name, mostFor, last.Format(time.DateTime+" MST"))
	}
	return nil
}

// token is what one acquisition writes to locked_by: the provider's owner and a
// number no other acquisition of this provider has. Release and extend match it
// exactly, so an old handle never touches a newer acquisition, whatever the
// column's collation makes of names and owners (digits compare as themselves in
// every collation).
func (e *Engine) token() string {
	var n [20]byte
	return e.cfg.LockedBy + "." + string(strconv.AppendUint(n[:0], e.acquired.Add(1), 10))
}

// TokenFits refuses a locked_by column col, of table, that holds at most max
// characters when a token of owner lockedBy may have more: a cut token could
// match another acquisition's. widen is the type to widen the column to, as
// the dialect spells it. It returns the longest token, for the dialect's
// further checks of the column.
func TokenFits(table string, col fmt.Stringer, lockedBy string, max int, widen string) (longest string, err error) {
	longest = lockedBy + "." + strconv.FormatUint(math.MaxUint64, 10)
	if n := utf8.RuneCountInString(longest); n > max {
		return "", fmt.Errorf("%w: table %s: column %s is too short for this provider's owner %q (%d characters "+
			"with the acquisition number); widen it to %s or give a shorter WithLockedBy",
			lockerr.UnsafeStore, table, col, lockedBy, n, widen)
	}
	return longest, nil
}

// TryLock makes one attempt on a validated config; lockerr.NotAcquired when the
// lock is held. In steady state it is a single statement. The first time the
// engine sees a name it checks the name against the column. A store that
// upserts makes a missing row with every attempt; for the others the engine
// inserts the row first, and again once a failed UPDATE has not seen the row
// for mostFor, so that a row deleted by hand is re-created within one mostFor.
func (e *Engine) TryLock(ctx context.Context, name string, mostFor, leastFor time.Duration) (*Lock, error) {
	mostFor = ceilMillis(mostFor)
	st, err := e.nameState(ctx, name)
	if err != nil {
		return nil, err
	}
	args := Args{Name: st.arg, Token: e.token()}
	now := time.Now()
	if st.needsInsert(now, mostFor) {
		g, err := statement(e, ctx, func(ctx context.Context) (Grant, error) { return e.store.Insert(ctx, args, mostFor) })
		if err != nil {
			return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
		}
		st.seen(now)
		if g.OK {
			return e.grant(name, args, g.Fence, now, mostFor, leastFor), nil
		}
		if e.caps.Upserts {
			return nil, lockerr.NotAcquired
		}
	}
	g, err := statement(e, ctx, func(ctx context.Context) (Grant, error) { return e.store.Update(ctx, args, mostFor) })
	if err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
	}
	if !g.OK {
		return nil, lockerr.NotAcquired
	}
	st.seen(now)
	return e.grant(name, args, g.Fence, now, mostFor, leastFor), nil
}

// nameState is what the engine knows of name's row, checking the name
// against the column the first time it sees it.
func (e *Engine) nameState(ctx context.Context, name string) (*nameState, error) {
	st, ok := e.names.get(name)
	if ok {
		return st, nil
	}
	key, err := e.store.NameKey(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
	}
	return e.names.add(name, key)
}

// NameKey returns what the column's collation makes of name, checking it
// against the column the first time the engine sees it. Two names with one key
// are one row. The name is remembered unless another remembered name has its
// key: that twin is the caller's to report, from the key.
func (e *Engine) NameKey(ctx context.Context, name string) (string, error) {
	if st, ok := e.names.get(name); ok {
		return st.key, nil
	}
	key, err := e.store.NameKey(ctx, name)
	if err != nil {
		return "", fmt.Errorf("shedlock: check lock name %q against the name column: %w", name, err)
	}
	_, _ = e.names.add(name, key)
	return key, nil
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
