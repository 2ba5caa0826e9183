package integration_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// customTable creates a lock table from ddl, in which {t} is the table's name,
// under a name no other test uses, and drops it when t ends.
func customTable(t *testing.T, db *sql.DB, ddl string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "shedlock_c_" + hex.EncodeToString(b[:])
	_, err := db.ExecContext(context.Background(), strings.ReplaceAll(ddl, "{t}", name))
	require.NoError(t, err, "create table")
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+name) })
	return name
}

// mysqlDDL is the documented table with each column's type given.
func mysqlDDL(name, lockUntil, lockedAt, lockedBy, tableOptions string) string {
	return "CREATE TABLE {t} (name " + name + " NOT NULL, lock_until " + lockUntil + " NOT NULL, " +
		"locked_at " + lockedAt + " NOT NULL, locked_by " + lockedBy + " NOT NULL, PRIMARY KEY (name)) " +
		"ENGINE=InnoDB " + tableOptions
}

func rowCount(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM `"+table+"`").Scan(&n))
	return n
}

// lockEventually retries TryLock until it succeeds or timeout passes.
func lockEventually(t *testing.T, p shedlock.LockProvider, cfg shedlock.LockConfig, timeout time.Duration) shedlock.Lock {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := p.TryLock(context.Background(), cfg)
		if err == nil {
			return l
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("TryLock(%q) within %v: %v", cfg.Name, timeout, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not a synchronisation
	}
}
