package main

import (
	"context"
	"fmt"

	"github.com/shedlock-go/shedlock"
)

// store is an open lock store: a SQL table, or a Redis server's keys of one env.
type store interface {
	// Locks returns every lock, by name, as the store sees them.
	Locks(ctx context.Context) ([]shedlock.LockInfo, error)
	// Inspect returns the lock of exactly this name; shedlock.ErrLockNotFound if
	// the store has none.
	Inspect(ctx context.Context, name string) (shedlock.LockInfo, error)
	// Unlock frees the lock of this name and returns it as it was just before.
	// With shown set, it frees the lock only while its holder is still the one
	// shown, and otherwise returns changedHandsError.
	Unlock(ctx context.Context, name string, shown *shedlock.LockInfo) (shedlock.LockInfo, error)
	// Migrate creates what the store needs, if it is missing, and checks it.
	Migrate(ctx context.Context) error
	// Where names what the locks are in, for messages: "table shedlock".
	Where() string
	Close() error
}

// changedHandsError is Unlock's answer when the lock is no longer the one shown.
type changedHandsError struct{ now shedlock.LockInfo }

func (e changedHandsError) Error() string {
	return fmt.Sprintf("the lock changed hands (now %s)", display(e.now.LockedBy))
}

// openStore opens the store c names. create allows a SQLite file to be created,
// for migrate; other commands refuse a file that is not there.
func openStore(ctx context.Context, c config, create bool) (store, error) {
	switch c.store {
	case storeRedis:
		return openRedis(ctx, c)
	case storeEtcd:
		return openEtcd(ctx, c)
	default:
		return openSQL(ctx, c, create)
	}
}

// sameHolder reports whether a and b are one acquisition.
func sameHolder(a, b shedlock.LockInfo) bool {
	return a.LockedBy == b.LockedBy && a.LockedAt.Equal(b.LockedAt)
}
