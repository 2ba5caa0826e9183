// Package shop is the order service of the examples: the article's tables, its two
// scheduled jobs (order timeout cancel, outbox polling), a load generator, and the
// queries that check, from the tables alone, whether runs overlapped or work was
// done twice.
//
// The same code runs on SQLite and on MySQL/MariaDB; the differences are the few
// strings in Dialect.
package shop

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	"modernc.org/sqlite"               // driver "sqlite"

	"github.com/shedlock-go/shedlock"
)

// Driver names accepted by Open.
const (
	SQLite = "sqlite"
	MySQL  = "mysql"
)

// Dialect holds what differs between the two databases.
type Dialect struct {
	Name string
	// Now is the database's current UTC time with microseconds, as an SQL
	// expression; NowMinus is the same less ? microseconds.
	Now, NowMinus string
	// ID, Time and OrdersIndex fill the DDL; AfterCreate, if set, runs after it
	// (SQLite has no index clause in CREATE TABLE).
	ID, Time, OrdersIndex, AfterCreate string
	// InsertIgnore starts an INSERT that skips rows whose key exists.
	InsertIgnore string
}

// dialect returns the Dialect of a driver name.
func dialect(driver string) (Dialect, bool) {
	switch driver {
	case SQLite:
		return Dialect{
			Name: SQLite,
			// SQLite's own 'now' keeps milliseconds; utc_now_us reads the same host
			// clock inside the database engine, to the microsecond.
			Now: "utc_now_us(0)", NowMinus: "utc_now_us(-?)",
			ID: "INTEGER PRIMARY KEY AUTOINCREMENT", Time: "TEXT",
			AfterCreate:  "CREATE INDEX IF NOT EXISTS idx_orders_status_ordered_at ON orders (status, ordered_at)",
			InsertIgnore: "INSERT OR IGNORE",
		}, true
	case MySQL:
		return Dialect{
			Name: MySQL,
			Now:  "UTC_TIMESTAMP(6)", NowMinus: "TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))",
			ID: "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", Time: "DATETIME(6)",
			OrdersIndex:  ", INDEX idx_orders_status_ordered_at (status, ordered_at)",
			InsertIgnore: "INSERT IGNORE",
		}, true
	}
	return Dialect{}, false
}

// sqliteTimeLayout is how utc_now_us writes times: fixed width, so that string
// order is time order.
const sqliteTimeLayout = "2006-01-02 15:04:05.000000"

func init() {
	// Registering an SQL function is, like registering a driver, done once per
	// process before any connection is opened.
	err := sqlite.RegisterScalarFunction("utc_now_us", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		off, _ := args[0].(int64)
		return time.Now().UTC().Add(time.Duration(off) * time.Microsecond).Format(sqliteTimeLayout), nil
	})
	if err != nil {
		panic(fmt.Sprintf("shop: register utc_now_us: %v", err))
	}
}

// DB is the service's database.
type DB struct {
	*sql.DB
	D Dialect
}

// Open opens driver ("sqlite": dsn is a file path; "mysql": a go-sql-driver DSN).
// SQLite files are opened with shedlock.SQLiteDSNParams, so several processes can
// share them.
func Open(driver, dsn string) (*DB, error) {
	d, ok := dialect(driver)
	if !ok {
		return nil, fmt.Errorf("shop: unknown driver %q (want %q or %q)", driver, SQLite, MySQL)
	}
	if driver == SQLite && !strings.HasPrefix(dsn, "file:") {
		dsn = "file:" + dsn + "?" + shedlock.SQLiteDSNParams
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("shop: open %s: %w", driver, err)
	}
	return &DB{DB: db, D: d}, nil
}

// LockProvider returns the lock provider for this database.
func (db *DB) LockProvider(ctx context.Context, opts ...shedlock.ProviderOption) (shedlock.LockProvider, error) {
	if db.D.Name == SQLite {
		p, err := shedlock.NewSQLiteProvider(db.DB, opts...)
		if err != nil {
			return nil, err
		}
		return p, p.EnsureTable(ctx)
	}
	p, err := shedlock.NewMySQLProvider(db.DB, opts...)
	if err != nil {
		return nil, err
	}
	return p, p.EnsureTable(ctx)
}
