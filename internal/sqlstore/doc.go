// Package sqlstore is the lock algorithm every SQL store shares: the engine that
// turns a lock attempt into one statement, the cache of names a provider has
// seen, the gate that runs a store's first-use checks once, and the
// administrative reads and writes. Each dialect (mysql, postgres, sqlite below
// it) implements [Store] with its own statements; the root package wraps an
// [Engine] on a Store in one public provider type per store.
//
// A lock goes down, never back up:
//
//	shedlock.Executor -> shedlock.MySQLProvider (facade) -> sqlstore.Engine -> mysql.Store -> SQL
package sqlstore
