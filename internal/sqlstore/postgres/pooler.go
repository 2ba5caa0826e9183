package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// A pooler in transaction mode (PgBouncer's pool_mode=transaction) hands each
// transaction of a client connection to whichever server session is free. A
// driver mode that prepares a statement in one round trip and runs it in
// another then runs it in a session that never prepared it: an error at best,
// and at worst another client's statement of the same name with this one's
// arguments (lib/pq names statements "1", "2", ... on every connection), which
// wrote another table's rows and returned locks that did not exist.

// unsafeBehindPooler names the driver modes that carry a statement across round
// trips, by how the first use sees them.
var unsafeBehindPooler = map[string]bool{
	"lib/pq":               true, // prepares a statement per connection
	"pgx cache statement":  true, // pgx's default: prepares and caches named statements
	"pgx describe exec":    true, // describes in one round trip, runs in the next
	"pgx (mode not known)": true,
}

// driverMode names db's driver and, for pgx, its default_query_exec_mode; simple
// is what makes one query use the simple protocol (for pgx, its
// QueryExecModeSimpleProtocol as the first argument; lib/pq does so for a query
// without arguments), so that the pooler check itself prepares nothing.
func driverMode(ctx context.Context, db *sql.DB, pkg string) (mode string, simple []any, err error) {
	switch pkg {
	case "github.com/lib/pq":
		return "lib/pq", nil, nil
	case "github.com/jackc/pgx/v5/stdlib", "github.com/jackc/pgx/v4/stdlib":
	default:
		return pkg, nil, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close()
	mode = "pgx (mode not known)"
	err = conn.Raw(func(dc any) error {
		// *stdlib.Conn.Conn().Config().DefaultQueryExecMode, without importing pgx.
		pc := reflect.ValueOf(dc).MethodByName("Conn")
		if !pc.IsValid() || pc.Type().NumIn() != 0 || pc.Type().NumOut() != 1 {
			return nil
		}
		cfg := pc.Call(nil)[0].MethodByName("Config")
		if !cfg.IsValid() || cfg.Type().NumIn() != 0 || cfg.Type().NumOut() != 1 {
			return nil
		}
		f := reflect.Indirect(cfg.Call(nil)[0]).FieldByName("DefaultQueryExecMode")
		if !f.IsValid() || !f.CanInt() {
			return nil
		}
		if s, ok := f.Interface().(fmt.Stringer); ok {
			mode = "pgx " + s.String()
		}
		for i := range int64(16) {
			v := reflect.New(f.Type()).Elem()
			v.SetInt(i)
			if s, ok := v.Interface().(fmt.Stringer); ok && s.String() == "simple protocol" {
				simple = []any{v.Interface()}
				break
			}
		}
		return nil
	})
	return mode, simple, err
}

// detectTxPooler reports whether db's connections reach the server through a
// pooler in transaction (or statement) mode. Directly, or through one in
// session mode, a client connection keeps one server backend for its life, and
// two client connections open at once have two. Two connections read their
// backend's pid in turns, poolerProbes times each: a pid that changes, or one
// both share, is a pooler (with PgBouncer's default LIFO the second meets the
// first's server at once when the pooler is quiet, and a busy one moves them
// between servers). Where the pool cannot give a second connection within a
// short wait (SetMaxOpenConns(1)), it cannot tell, and reports none.
func detectTxPooler(ctx context.Context, db *sql.DB, simple []any) (bool, error) {
	a, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer a.Close()
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	b, err := db.Conn(waitCtx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return false, nil
		}
		return false, err
	}
	defer b.Close()
	var first [2]int64
	for i := range poolerProbes {
		var pids [2]int64
		for k, c := range []*sql.Conn{a, b} {
			if err := c.QueryRowContext(ctx, backendPIDSQL, simple...).Scan(&pids[k]); err != nil {
				return pooledPrepareError(err)
			}
		}
		if i == 0 {
			first = pids
		}
		if pids[0] == pids[1] || pids != first {
			return true, nil
		}
	}
	return false, nil
}

// poolerProbes is how many times each of the two connections reads its pid.
const poolerProbes = 8

// pooledPrepareError turns the errors a pooler in transaction mode gives a
// statement prepared in another session (prepared statement does not exist,
// or already exists) into that verdict; other errors are errors.
func pooledPrepareError(err error) (bool, error) {
	switch sqlState(err) {
	case "26000", "42P05": // invalid_sql_statement_name, duplicate_prepared_statement
		return true, nil
	}
	return false, err
}

// checkPooler refuses a driver mode that cannot work through a pooler in
// transaction mode, when it finds one; it returns the mode.
func checkPooler(ctx context.Context, db *sql.DB, pkg string) (string, error) {
	mode, simple, err := driverMode(ctx, db, pkg)
	if err != nil {
		return "", fmt.Errorf("shedlock: read the driver's query mode: %w", err)
	}
	if !unsafeBehindPooler[mode] {
		return mode, nil
	}
	pooled, err := detectTxPooler(ctx, db, simple)
	if err != nil {
		return mode, fmt.Errorf("shedlock: check for a pooler in transaction mode (SELECT pg_backend_pid() on two connections): %w", err)
	}
	if pooled {
		return mode, poolerError(mode)
	}
	return mode, nil
}

// poolerError is the refusal of a driver mode behind a pooler in transaction
// mode.
func poolerError(mode string) error {
	return fmt.Errorf("%w: the connections go through a pooler in transaction mode (PgBouncer's "+
		"pool_mode=transaction: client connections met server sessions that were not theirs alone), and "+
		"the driver mode %s runs a statement in a session other than the one that prepared it, where it "+
		"can run another client's statement; use pgx (github.com/jackc/pgx/v5/stdlib) with "+
		"default_query_exec_mode=exec, simple_protocol or cache_describe, or the pooler in session mode",
		lockerr.UnsafeStore, mode)
}
