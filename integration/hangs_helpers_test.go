package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// hangRig is a pod whose pool reaches the database through a fault proxy, so
// that its connections can be silenced (a blackhole: open, but nothing comes
// back, as a peer that died behind a firewall), with another pod and a pool
// that go direct.
type hangRig struct {
	t       *testing.T
	proxy   *faultproxy.Proxy
	db      *sql.DB // the pod's pool, through the proxy
	pod     lockedByProvider
	other   shedlock.LockProvider // another pod, direct
	admin   *sql.DB               // direct: the truth about the table
	table   string
	holdSQL string // locked_by, lock_until and the time left, in ms, of one name
}

type lockedByProvider interface {
	shedlock.LockProvider
	LockedBy() string
}

// hangDriver opens a hangRig on one database with one driver.
type hangDriver struct {
	name string
	open func(t *testing.T) *hangRig
}

// hangDrivers are the drivers whose waits must end within their bounds: lib/pq
// does not honour a context while it reads a dead connection; pgx and
// go-sql-driver/mysql do.
var hangDrivers = []hangDriver{
	{"LibPQ", postgresHangRig(libpqClient)},
	{"PGX", postgresHangRig(pgxClient)},
	{"MySQL", mysqlHangRig},
}

// forEachHangDriver runs fn once per driver, in parallel.
func forEachHangDriver(t *testing.T, fn func(t *testing.T, r *hangRig)) {
	t.Parallel()
	for _, d := range hangDrivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(t, d.open(t))
		})
	}
}

func postgresHangRig(c pgClient) func(t *testing.T) *hangRig {
	return func(t *testing.T) *hangRig {
		admin := testdb.OpenPostgres(t, testdb.PGX, nil)
		table := testdb.NewPostgresTable(t, admin)
		u, err := url.Parse(testdb.PostgresURL(t, c.params))
		require.NoError(t, err)
		r := &hangRig{t: t, admin: admin, table: table,
			holdSQL: "SELECT locked_by, (EXTRACT(EPOCH FROM lock_until) * 1000)::bigint, " +
				"(EXTRACT(EPOCH FROM lock_until - (statement_timestamp() AT TIME ZONE 'UTC')) * 1000)::bigint " +
				"FROM " + table + " WHERE name = $1"}
		u.Host = r.startProxy(u.Host)
		r.db = r.openPool(c.driver, u.String())
		r.pod = newPostgresProvider(t, r.db, shedlock.WithTableName(table))
		r.other = newPostgresProvider(t, testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table))
		r.closeProxyFirst()
		return r
	}
}

func mysqlHangRig(t *testing.T) *hangRig {
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	cfg, err := mysql.ParseDSN(testdb.MySQLDSN(t))
	require.NoError(t, err)
	r := &hangRig{t: t, admin: admin, table: table,
		// UNIX_TIMESTAMP of a TIMESTAMP is absolute, whatever the session's zone.
		holdSQL: "SELECT locked_by, CAST(UNIX_TIMESTAMP(lock_until) * 1000 AS SIGNED), " +
			"CAST((UNIX_TIMESTAMP(lock_until) - UNIX_TIMESTAMP(NOW(6))) * 1000 AS SIGNED) " +
			"FROM " + table + " WHERE name = ?"}
	// The driver's defaults: no read timeout, as most services run it.
	cfg.Addr = r.startProxy(cfg.Addr)
	r.db = r.openPool("mysql", cfg.FormatDSN())
	r.pod = newMySQLProvider(t, r.db, shedlock.WithTableName(table))
	r.other = newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	r.closeProxyFirst()
	return r
}

func (r *hangRig) startProxy(upstream string) string {
	px, err := faultproxy.Start(upstream)
	require.NoError(r.t, err)
	r.proxy = px
	return px.Addr()
}

func (r *hangRig) openPool(driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { _ = db.Close() })
	return db
}

// closeProxyFirst makes the proxy close before the providers and the pool
// (cleanups run last in, first out): closing its connections ends the
// statements a driver still waits on in the blackhole. A provider's Close
// waits for them (database/sql closes a statement on a connection only once
// the connection is free), and with lib/pq they never end by themselves.
func (r *hangRig) closeProxyFirst() {
	r.t.Cleanup(func() { _ = r.proxy.Close() })
}

// executor returns an executor on the pod whose log the returned buffer keeps.
// Its Stop at the end of the test has a bound of its own, so that a run still
// blocked fails the test rather than hanging it.
func (r *hangRig) executor(opts ...shedlock.ExecutorOption) (*shedlock.Executor, *logBuffer) {
	ex, logs := newLoggedExecutor(r.pod, opts...)
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := ex.Stop(ctx); err != nil {
			r.t.Errorf("executor Stop at the end of the test: %v", err)
		}
	})
	return ex, logs
}

// hold is a lock row as the database sees it now.
type hold struct {
	lockedBy string
	until    int64         // lock_until, ms since the epoch
	left     time.Duration // lock_until less the database's now
}

// holding reads name's row through the direct pool; ok is false if there is none.
func (r *hangRig) holding(name string) (h hold, ok bool, err error) {
	var leftMS int64
	err = r.admin.QueryRow(r.holdSQL, name).Scan(&h.lockedBy, &h.until, &leftMS)
	if errors.Is(err, sql.ErrNoRows) {
		return hold{}, false, nil
	}
	h.left = time.Duration(leftMS) * time.Millisecond
	return h, err == nil, err
}

// heldByPod reports whether h is a live lock of the pod: locked_by is its owner
// with the acquisition's token after it.
func (r *hangRig) heldByPod(h hold) bool {
	return h.left > 0 && strings.HasPrefix(h.lockedBy, r.pod.LockedBy())
}

// swallowedMoreThan waits until the blackhole has dropped more than n chunks,
// that is until a statement was sent into it, or the deadline passes.
func (r *hangRig) swallowedMoreThan(n int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if r.proxy.Stats().Swallowed > n {
			return true
		}
		time.Sleep(5 * time.Millisecond) // polling the proxy's counters
	}
	return false
}

// runResult is what a Run returned and when.
type runResult struct {
	ran bool
	err error
	at  time.Time
}

// runAsync calls run in a goroutine and returns a channel with its result.
func runAsync(run func() (bool, error)) <-chan runResult {
	ch := make(chan runResult, 1)
	go func() {
		ran, err := run()
		ch <- runResult{ran, err, time.Now()}
	}()
	return ch
}
