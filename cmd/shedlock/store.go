package main

import (
	"context"
	"fmt"

	"github.com/shedlock-go/shedlock"
)

// store is an open lock store, as every command uses it: its provider's
// shedlock.Admin, whatever the store. A store kind adds only how it is opened
// (storeKind); nothing here knows a store's format.
type store struct {
	shedlock.Admin
	// where names what the locks are in, for messages: "table shedlock",
	// "env default".
	where string
	close func() error
}

func (s *store) Close() error { return s.close() }

// storeKind is one kind of store the command opens.
type storeKind struct {
	// open connects to c.dsn and returns the store. create allows what holds
	// the store to be made (a SQLite file), for migrate.
	open func(ctx context.Context, c config, create bool) (*store, error)
	// noTable, when set, is why migrate has nothing to do: the store keeps
	// each lock as a key of its own.
	noTable string
}

// storeKinds are the kinds of store, by their -store names (see storeNames).
func storeKinds() map[string]storeKind {
	sqlKind := storeKind{open: openSQL}
	return map[string]storeKind{
		storeMySQL: sqlKind, storePostgres: sqlKind, storeSQLite: sqlKind,
		storeRedis: {open: openRedis, noTable: "Redis needs no table; its locks are keys job-lock:<env>:<name>"},
		storeEtcd:  {open: openEtcd, noTable: "etcd needs no table; its locks are keys shedlock:<env>:<name>"},
	}
}

// openStore opens the store c names. create allows a SQLite file to be created,
// for migrate; other commands refuse a file that is not there.
func openStore(ctx context.Context, c config, create bool) (*store, error) {
	kind, ok := storeKinds()[c.store]
	if !ok {
		return nil, usageError{fmt.Sprintf("-store %q: want mysql, postgres, sqlite, redis or etcd", c.store)}
	}
	return kind.open(ctx, c, create)
}

// openWithin opens the store c names, within c.timeout: it stays open past
// it, for a command whose each step has a timeout of its own.
func openWithin(ctx context.Context, c config) (*store, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.open(ctx, c, false)
}

// noExpiry is the TimeLeft of a lock held with no end (shedlockredis: a key
// someone made without a time to live): it stays held until freed.
const noExpiry = -1
