package integration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// Lock times cut to the second would free a 600 ms lock at once and end every
// lock up to a second early: such a table is refused on first use, with the fix.
func TestMySQLTableWithoutMillisRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lockUntil, lockedAt, wantFix string
	}{
		{"LockUntilTimestamp", "TIMESTAMP", "TIMESTAMP(3)", "MODIFY lock_until TIMESTAMP(3) NOT NULL"},
		{"LockUntilDatetime", "DATETIME", "DATETIME(3)", "MODIFY lock_until DATETIME(3) NOT NULL"},
		{"LockUntilTimestamp2", "TIMESTAMP(2)", "TIMESTAMP(3)", "MODIFY lock_until TIMESTAMP(3) NOT NULL"},
		{"LockedAtTimestamp", "TIMESTAMP(3)", "TIMESTAMP", "MODIFY locked_at TIMESTAMP(3) NOT NULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Open(t, nil)
			table := customTable(t, admin, mysqlDDL("VARCHAR(64)", tc.lockUntil, tc.lockedAt, "VARCHAR(255)", "DEFAULT CHARSET=utf8mb4"))
			p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: 600 * time.Millisecond})
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
			assert.Contains(t, err.Error(), "ALTER TABLE "+table+" "+tc.wantFix)
			assert.Zero(t, rowCount(t, admin, table))
		})
	}
}

// INSERT IGNORE stores a name cut to the column, or with ? for what the
// character set lacks, and reports success: such a name is refused before any
// row is written, naming the lock and the column.
func TestMySQLNameTheColumnCannotStoreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		test, nameType, charset, lockName, want string
	}{
		{"TooLongForVarchar10", "VARCHAR(10)", "utf8mb4", "orderTimeoutCancelJob", "name VARCHAR(10)"},
		{"CyrillicInLatin1", "VARCHAR(64)", "latin1", "отчёт", "character set latin1"},
		{"EmojiInUtf8mb3", "VARCHAR(64)", "utf8mb3", "job🔥", "character set utf8mb3"},
		{"Chinese in ascii", "VARCHAR(64)", "ascii", "任务", "character set ascii"},
		{"TrailingSpaceInChar", "CHAR(64)", "utf8mb4", "job ", "name CHAR(64)"},
	} {
		t.Run(tc.test, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Open(t, nil)
			table := customTable(t, admin, mysqlDDL(tc.nameType, "TIMESTAMP(3)", "TIMESTAMP(3)", "VARCHAR(255)", "DEFAULT CHARSET="+tc.charset))
			p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: tc.lockName, LockAtMostFor: time.Minute})
			require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
			assert.Contains(t, err.Error(), `lock "`+tc.lockName+`"`)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, rowCount(t, admin, table), "nothing written")
		})
	}
	// What the column can store works on the same kinds of table.
	for _, tc := range []struct{ test, nameType, charset, lockName string }{
		{"TenInVarchar10", "VARCHAR(10)", "utf8mb4", "0123456789"},
		{"AccentsInLatin1", "VARCHAR(64)", "latin1", "café-crème"},
		{"HangulInUtf8mb3", "VARCHAR(64)", "utf8mb3", "주문취소"},
	} {
		t.Run(tc.test, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Open(t, nil)
			table := customTable(t, admin, mysqlDDL(tc.nameType, "TIMESTAMP(3)", "TIMESTAMP(3)", "VARCHAR(255)", "DEFAULT CHARSET="+tc.charset))
			p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			q := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			cfg := shedlock.LockConfig{Name: tc.lockName, LockAtMostFor: time.Minute}
			l, err := p.TryLock(context.Background(), cfg)
			require.NoError(t, err)
			_, err = q.TryLock(context.Background(), cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired)
			var stored string
			require.NoError(t, admin.QueryRow("SELECT name FROM "+table).Scan(&stored))
			assert.Equal(t, tc.lockName, stored)
			require.NoError(t, l.Unlock(context.Background()))
		})
	}
}

// A locked_by column that cannot hold the provider's owner exactly could make
// two owners one: refused on first use.
func TestMySQLLockedByColumnRefused(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	narrow := customTable(t, admin, mysqlDDL("VARCHAR(64)", "TIMESTAMP(3)", "TIMESTAMP(3)", "VARCHAR(20)", "DEFAULT CHARSET=utf8mb4"))
	p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(narrow))
	_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "locked_by VARCHAR(20) is too short")

	latin1 := customTable(t, admin, mysqlDDL("VARCHAR(64)", "TIMESTAMP(3)", "TIMESTAMP(3)", "VARCHAR(255)", "DEFAULT CHARSET=latin1"))
	p = newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(latin1), shedlock.WithLockedBy("под-1"))
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "cannot store this provider's owner")
}

// A table that is missing, or lacks a column, is an error that says so.
func TestMySQLMissingTableOrColumnRefused(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName("shedlock_no_such_table"))
	_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "does not exist")

	table := customTable(t, admin, "CREATE TABLE {t} (name VARCHAR(64) PRIMARY KEY, lock_until TIMESTAMP(3) NOT NULL, locked_by VARCHAR(255) NOT NULL)")
	p = newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "has no column locked_at")
}

// Names the column's collation makes one row: an old handle of one never
// releases the other's newer acquisition, and one provider refuses the second
// spelling instead of letting two jobs block each other.
func TestMySQLCollationEqualNames(t *testing.T) {
	t.Parallel()
	ddl := func(collation string) string {
		return mysqlDDL("VARCHAR(64) COLLATE "+collation, "TIMESTAMP(3)", "TIMESTAMP(3)", "VARCHAR(255)", "DEFAULT CHARSET=utf8mb4 COLLATE "+collation)
	}
	t.Run("LateUnlockAcrossSpellingsAndOwnerCase", func(t *testing.T) {
		t.Parallel()
		admin := testdb.Open(t, nil)
		table := customTable(t, admin, ddl("utf8mb4_general_ci"))
		a := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table), shedlock.WithLockedBy("pod-a"))
		b := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table), shedlock.WithLockedBy("POD-A"))
		c := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
		require.NotEqual(t, strings.ToLower(a.LockedBy()), strings.ToLower(b.LockedBy()), "owners differ by more than case")

		old, err := a.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: 300 * time.Millisecond})
		require.NoError(t, err)
		// a's lock runs out; b takes the same row under another spelling.
		newer := lockEventually(t, b, shedlock.LockConfig{Name: "JOB", LockAtMostFor: time.Minute}, 5*time.Second)
		require.ErrorIs(t, old.Unlock(context.Background()), shedlock.ErrLockLost)
		require.ErrorIs(t, old.Extend(context.Background(), time.Minute, 0), shedlock.ErrLockLost)
		_, err = c.TryLock(context.Background(), shedlock.LockConfig{Name: "job ", LockAtMostFor: time.Minute})
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "b's newer lock must still hold")
		require.NoError(t, newer.Unlock(context.Background()))
	})
	for _, tc := range []struct {
		collation, first, second string
		sameRow                  bool
	}{
		{"utf8mb4_general_ci", "job", "JOB", true},
		{"utf8mb4_general_ci", "job", "job ", true},
		{"utf8mb4_general_ci", "🔥", "🌊", true},
		{"utf8mb4_general_ci", "café", "cafe", true},
		{"utf8mb4_unicode_ci", "straße", "strasse", true},
		{"utf8mb4_bin", "job", "JOB", false},
		{"utf8mb4_bin", "job", "job ", true},
		{"utf8mb4_nopad_bin", "job", "job ", false},
		{"utf8mb4_unicode_520_ci", "🔥", "🌊", false},
	} {
		t.Run(tc.collation+"/"+tc.first+"/"+tc.second, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Open(t, nil)
			table := customTable(t, admin, ddl(tc.collation))
			p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: tc.first, LockAtMostFor: time.Minute})
			require.NoError(t, err)
			_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: tc.second, LockAtMostFor: time.Minute})
			if tc.sameRow {
				require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
				assert.Contains(t, err.Error(), "same row")
			} else {
				require.NoError(t, err, "distinct rows under %s", tc.collation)
			}
			require.NoError(t, l.Unlock(context.Background()))
		})
	}
}
