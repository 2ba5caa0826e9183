package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A session with autocommit off would never commit the lock: another pod would
// block on the row, then take the lock when the connection rolls back. The
// provider refuses such a pool on first use and writes nothing.
func TestMySQLAutocommitOffRefused(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

	p := newMySQLProvider(t, testdb.Open(t, map[string]string{"autocommit": "0"}), shedlock.WithTableName(table))
	_, err := p.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "autocommit")
	assert.Zero(t, rowCount(t, admin, table), "nothing written")

	// Another pod is not blocked: the lock is free, at once.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	other := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	l, err := other.TryLock(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(context.Background()))
}

// The server's init_connect can turn autocommit off for every connection of a
// user without SUPER; the provider sees the session as it is.
func TestMySQLAutocommitOffByInitConnectRefused(t *testing.T) {
	admin := testdb.Open(t, nil)
	var old string
	require.NoError(t, admin.QueryRow("SELECT @@global.init_connect").Scan(&old))
	user := fmt.Sprintf("shedlock_ic_%d", time.Now().UnixNano()%1e9)
	_, err := admin.Exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec("DROP USER '" + user + "'@'%'") })
	_, err = admin.Exec("GRANT ALL ON test.* TO '" + user + "'@'%'")
	require.NoError(t, err)
	_, err = admin.Exec("SET GLOBAL init_connect = 'SET autocommit=0'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec("SET GLOBAL init_connect = ?", old) })

	cfg, err := mysql.ParseDSN(testdb.MySQLDSN(t))
	require.NoError(t, err)
	cfg.User, cfg.Passwd = user, "pw"
	db := openDSN(t, cfg.FormatDSN())
	table := testdb.NewTable(t, admin)
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "init_connect")
	assert.Zero(t, rowCount(t, admin, table))
}

// What already held must keep holding: odd SQL modes, driver options, and the
// column types Java ShedLock's users have.
func TestMySQLKeepsWorking(t *testing.T) {
	t.Parallel()
	variants := []struct {
		name   string
		params map[string]string
		ddl    string // "" for the documented table
	}{
		{name: "SQLModeANSIQuotes", params: map[string]string{"sql_mode": "'ANSI_QUOTES'"}},
		{name: "SQLModeOracle", params: map[string]string{"sql_mode": "'ORACLE'"}},
		{name: "SQLModeTraditional", params: map[string]string{"sql_mode": "'TRADITIONAL'"}},
		{name: "SQLModeEmpty", params: map[string]string{"sql_mode": "''"}},
		{name: "InterpolateParams", params: map[string]string{"interpolateParams": "true"}},
		{name: "ClientFoundRows", params: map[string]string{"clientFoundRows": "true"}},
		{name: "ParseTime", params: map[string]string{"parseTime": "true"}},
		{name: "SessionZoneSYSTEM", params: map[string]string{"time_zone": "'SYSTEM'"}},
		{name: "SessionZonePlus13", params: map[string]string{"time_zone": "'+13:00'"}},
		{name: "SessionZoneMinus12", params: map[string]string{"time_zone": "'-12:00'"}},
		{name: "Datetime3", ddl: mysqlDDL("VARCHAR(64)", "DATETIME(3)", "DATETIME(3)", "VARCHAR(255)", "DEFAULT CHARSET=utf8mb4")},
		{name: "Timestamp6", ddl: mysqlDDL("VARCHAR(64)", "TIMESTAMP(6)", "TIMESTAMP(6)", "VARCHAR(255)", "DEFAULT CHARSET=utf8mb4")},
		{name: "JavaDocumentedDDL", ddl: "CREATE TABLE {t}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, " +
			"locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"},
		{name: "Latin1Table", ddl: mysqlDDL("VARCHAR(64)", "TIMESTAMP(3)", "TIMESTAMP(3)", "VARCHAR(255)", "DEFAULT CHARSET=latin1")},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			shedlockRun(t, v.params, v.ddl)
		})
	}
}

func openDSN(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// shedlockRun runs the provider suite with pools opened with params, on tables
// made from ddl (the documented table when ddl is "").
func shedlockRun(t *testing.T, params map[string]string, ddl string) {
	shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		admin := testdb.Open(t, nil)
		table := testdb.NewTable(t, admin)
		if ddl != "" {
			table = customTable(t, admin, ddl)
		}
		return func(t *testing.T) shedlock.LockProvider {
			return newMySQLProvider(t, testdb.Open(t, params), shedlock.WithTableName(table))
		}
	})
}
