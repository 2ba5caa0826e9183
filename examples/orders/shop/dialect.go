// Package shop is the order service of the examples: the article's tables, its two
// scheduled jobs (order timeout cancel, outbox polling), a load generator, and the
// queries that check, from the tables alone, whether runs overlapped or work was
// done twice.
//
// The same code runs on SQLite, MySQL/MariaDB and PostgreSQL; the differences
// are the few strings in Dialect.
package shop

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"modernc.org/sqlite"               // driver "sqlite"

	"github.com/shedlock-go/shedlock"
)

// Driver names accepted by Open.
const (
	SQLite   = "sqlite"
	MySQL    = "mysql"
	Postgres = "postgres" // with pgx's database/sql driver
)

// Drivers are the names Open accepts.
var Drivers = []string{SQLite, MySQL, Postgres}

// Dialect holds what differs between the databases. Statements are written
// with ? placeholders; on PostgreSQL they become $1, $2, ...
type Dialect struct {
	Name string
	// Now is the database's current UTC time with microseconds, as an SQL
	// expression (the statement's time, not its transaction's); NowMinus is the
	// same less ? microseconds.
	Now, NowMinus string
	// ID, Time and OrdersIndex fill the DDL; AfterCreate, if set, runs after it
	// (SQLite and PostgreSQL have no index clause in CREATE TABLE).
	ID, Time, OrdersIndex, AfterCreate string
	// InsertIgnore starts an INSERT that skips rows whose key exists, and
	// IgnoreEnd ends it.
	InsertIgnore, IgnoreEnd string
	// Returning: the driver has no LastInsertId; an INSERT returns its id.
	Returning bool
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
	case Postgres:
		return Dialect{
			Name: Postgres,
			// clock_timestamp, not now(): now() is the start of the transaction.
			Now:      "(clock_timestamp() AT TIME ZONE 'UTC')",
			NowMinus: "((clock_timestamp() AT TIME ZONE 'UTC') - ?::bigint * INTERVAL '1 microsecond')",
			ID:       "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", Time: "TIMESTAMP(6)",
			AfterCreate:  "CREATE INDEX IF NOT EXISTS idx_orders_status_ordered_at ON orders (status, ordered_at)",
			InsertIgnore: "INSERT", IgnoreEnd: " ON CONFLICT DO NOTHING",
			Returning: true,
		}, true
	}
	return Dialect{}, false
}

// bind rewrites ? placeholders as PostgreSQL's $n. The statements here have no
// ? inside a string literal.
func (d Dialect) bind(query string) string {
	if d.Name != Postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
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

// DB is the service's database. Its ExecContext, QueryContext, QueryRowContext
// and BeginTx take statements with ? placeholders on every database.
type DB struct {
	*sql.DB
	D Dialect
}

// Open opens driver ("sqlite": dsn is a file path; "mysql": a go-sql-driver DSN;
// "postgres": a URL or key=value string for pgx). SQLite files are opened with
// shedlock.SQLiteDSNParams, so several processes can share them.
func Open(driver, dsn string) (*DB, error) {
	d, ok := dialect(driver)
	if !ok {
		return nil, fmt.Errorf("shop: unknown driver %q (want one of %v)", driver, Drivers)
	}
	sqlDriver := driver
	switch driver {
	case SQLite:
		if !strings.HasPrefix(dsn, "file:") {
			dsn = "file:" + dsn + "?" + shedlock.SQLiteDSNParams
		}
	case Postgres:
		sqlDriver = "pgx"
	}
	db, err := sql.Open(sqlDriver, dsn)
	if err != nil {
		return nil, fmt.Errorf("shop: open %s: %w", driver, err)
	}
	return &DB{DB: db, D: d}, nil
}

// ExecContext runs query, written with ? placeholders.
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return db.DB.ExecContext(ctx, db.D.bind(query), args...)
}

// QueryContext runs query, written with ? placeholders.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.DB.QueryContext(ctx, db.D.bind(query), args...)
}

// QueryRowContext runs query, written with ? placeholders.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return db.DB.QueryRowContext(ctx, db.D.bind(query), args...)
}

// BeginTx starts a transaction whose statements take ? placeholders.
func (db *DB) BeginTx(ctx context.Context, opts *sql.TxOptions) (*Tx, error) {
	tx, err := db.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Tx{Tx: tx, d: db.D}, nil
}

// Tx is a transaction of DB.
type Tx struct {
	*sql.Tx
	d Dialect
}

// ExecContext runs query, written with ? placeholders.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.Tx.ExecContext(ctx, tx.d.bind(query), args...)
}

// QueryRowContext runs query, written with ? placeholders.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return tx.Tx.QueryRowContext(ctx, tx.d.bind(query), args...)
}

// execer is a DB or a Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// insert runs an INSERT and returns the id of its row.
func insert(ctx context.Context, d Dialect, e execer, query string, args ...any) (int64, error) {
	if d.Returning {
		var id int64
		err := e.QueryRowContext(ctx, query+" RETURNING id", args...).Scan(&id)
		return id, err
	}
	res, err := e.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}
