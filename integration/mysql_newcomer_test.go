package integration_test

// Issue 16, items 13 and 14: what a newcomer trips on with MySQL.
//   - 13: EnsureTable fails for a user without the CREATE privilege even when the
//     table exists (PostgreSQL already falls back to checking that it exists), so
//     the README's quick start exits.
//   - 14: a MySQL provider given a PostgreSQL connection says
//     `missing FROM-clause entry for table "session"` instead of which database
//     it found; a session with sql_mode EMPTY_STRING_IS_NULL fails on first use
//     (a COALESCE(…, '') scans NULL).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// Item 13: a user with SELECT, INSERT and UPDATE on the lock table only, the
// table already there: EnsureTable has nothing to create and succeeds, and the
// provider takes locks.
func TestMySQLEnsureTableWithoutCreatePrivilege(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	var b [6]byte
	_, _ = rand.Read(b[:])
	user, password := "shedlock_u_"+hex.EncodeToString(b[:3]), hex.EncodeToString(b[3:])
	_, err := admin.ExecContext(ctx, "CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+password+"'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP USER IF EXISTS '"+user+"'@'%'") })
	var schema string
	require.NoError(t, admin.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&schema))
	_, err = admin.ExecContext(ctx, "GRANT SELECT, INSERT, UPDATE ON `"+schema+"`.`"+table+"` TO '"+user+"'@'%'")
	require.NoError(t, err)

	cfg, err := mysql.ParseDSN(testdb.MySQLDSN(t))
	require.NoError(t, err)
	cfg.User, cfg.Passwd = user, password
	db := openDSN(t, cfg.FormatDSN())
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	require.NoError(t, p.EnsureTable(ctx), "the table exists: EnsureTable has nothing to create")
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
}

// Item 14: a MySQL provider on a PostgreSQL pool says that it found PostgreSQL,
// with either driver.
func TestMySQLProviderOnPostgresSaysSo(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{testdb.PGX, testdb.LibPQ} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			// The driver tells, so the constructor refuses before any statement.
			_, err := shedlock.NewMySQLProvider(testdb.OpenPostgres(t, driver, nil))
			require.ErrorIs(t, err, shedlock.ErrInvalidOption)
			assert.Contains(t, err.Error(), "PostgreSQL", "the error says which database the pool reaches")
			assert.Contains(t, err.Error(), "NewPostgresProvider", "and which constructor fits it")
		})
	}
}

// Item 14: sessions with EMPTY_STRING_IS_NULL (MariaDB's Oracle-like mode, also
// set alone) take, refuse, extend and release locks from the first use on.
func TestMySQLEmptyStringIsNullSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Open(t, nil)
	var mode string
	require.NoError(t, admin.QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode").Scan(&mode))
	if !strings.Contains(mode, "EMPTY_STRING_IS_NULL") {
		mode = strings.TrimPrefix(mode+",EMPTY_STRING_IS_NULL", ",")
	}
	table := testdb.NewTable(t, admin)
	params := map[string]string{"sql_mode": "'" + mode + "'"}
	a := newMySQLProvider(t, testdb.Open(t, params), shedlock.WithTableName(table))
	b := newMySQLProvider(t, testdb.Open(t, params), shedlock.WithTableName(table))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := a.TryLock(ctx, cfg)
	require.NoError(t, err, "first use with sql_mode=%s", mode)
	_, err = b.TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	require.NoError(t, l.Extend(ctx, time.Minute, 0))
	require.NoError(t, l.Unlock(ctx))
	l, err = b.TryLock(ctx, cfg)
	require.NoError(t, err, "after the release")
	require.NoError(t, l.Unlock(ctx))
}
