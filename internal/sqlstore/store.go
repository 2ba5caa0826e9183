package sqlstore

import (
	"context"
	"time"
)

// Store is one dialect's statements on one table. Each statement method reports
// whether it changed the row as asked: false from Release or Extend means the
// row is not this token's. Every method runs the store's first-use checks
// before its first statement.
type Store interface {
	// Caps describes the dialect's statements.
	Caps() Caps
	// Table is the table as WithTableName gave it, for messages.
	Table() string

	// Insert and Update take the lock with one statement each, which also
	// writes the acquisition's fencing token where the table has the column.
	Insert(ctx context.Context, a Args, mostFor time.Duration) (Grant, error)
	Update(ctx context.Context, a Args, mostFor time.Duration) (Grant, error)
	Release(ctx context.Context, a Args, leastFor time.Duration) (bool, error)
	Extend(ctx context.Context, a Args, mostFor time.Duration) (bool, error)
	// NameKey checks that the name column stores name exactly and returns what
	// the column's collation makes of it: two names with one key are one row.
	NameKey(ctx context.Context, name string) (string, error)
	// NameKeys is NameKey for many names at once, with one statement where
	// the dialect needs one: a name's own error (lockerr.InvalidConfig) is in
	// errs at its index, a failure of the store is err.
	NameKeys(ctx context.Context, names []string) (keys []string, errs []error, err error)
	// AcquireBatch takes the rows of as, each on the same condition as Insert,
	// in the order given, with one statement where the dialect can (two on
	// MySQL), and reports one Grant per row in that order. ErrConflict: a
	// conflict rolled the statement back; ErrNoBatch: the server cannot run
	// it.
	AcquireBatch(ctx context.Context, as []BatchArgs) ([]Grant, error)
	// BusyRows tells, after AcquireBatch's ErrConflict, which rows of as
	// another transaction holds now, without waiting for them: the engine
	// sends the others again. nil, nil where the dialect cannot tell, or its
	// batch statement does not wait for such rows.
	BusyRows(ctx context.Context, as []BatchArgs) ([]bool, error)

	// Ready runs the first-use checks, once they pass.
	Ready(ctx context.Context) error
	// Probe runs a statement that needs the table, its columns and the right to
	// write them, and changes nothing.
	Probe(ctx context.Context) error
	// LockRows reads the lock rows (every one by name, or only the one of
	// exactly name when name is not empty), held and time left by the
	// database's clock; Caps.ScanRows reads a query's rows.
	LockRows(ctx context.Context, name string) ([]Row, error)
	// Clear frees r's row, marking it ForceUnlockedBy, if it still holds the
	// acquisition r read (the same locked_by and locked_at); false if not.
	Clear(ctx context.Context, r Row) (bool, error)

	// EnsureTable creates the table if it does not exist.
	EnsureTable(ctx context.Context) error
	// Close releases what the first use prepared; the next use prepares again.
	Close() error
}

// Caps is what a dialect's statements can do, as data: the engine reads it
// instead of asking the store what kind it is.
type Caps struct {
	// Upserts: Insert also takes an existing row whose lock has run out (INSERT
	// ... ON CONFLICT DO UPDATE ... WHERE), so a false from it means the lock is
	// held and no Update need follow.
	Upserts bool
	// LatestLockEnd is the last instant the lock_until column can hold; zero
	// when it holds any lock a time.Duration can ask for.
	LatestLockEnd time.Time
	// TimeUnit is the unit of the times LocksQuery returns.
	TimeUnit time.Duration
}

// Grant is what an acquiring statement reports.
type Grant struct {
	// OK: the statement took the lock.
	OK bool
	// Fence is the fencing token the statement wrote, which it also returned:
	// the larger of the row's last token + 1 and the database's clock in
	// microseconds since 1970. 0 when the table has no fence column (Java
	// ShedLock's table before migration 0002).
	Fence int64
	// Paused: the statement did not take the lock because an operator paused
	// the job (see ControlStore), as the statement itself found; never set
	// with OK.
	Paused bool
}

// Args are a lock's name and an acquisition's token as statement arguments
// (both strings). Each is converted to an interface value once, the name when
// the provider first sees it and the token when it is made, rather than for
// every statement: each conversion is an allocation.
type Args struct {
	Name, Token any
}
