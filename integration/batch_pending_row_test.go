package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// A row another transaction holds fails its member alone (docs/stores.md,
// Batches), also when that row is one the other transaction is making: an
// operator's INSERT left uncommitted, or the SELECT ... FOR UPDATE of a name
// not yet in the table (a gap lock under REPEATABLE READ). Neither SKIP
// LOCKED nor a read sees such a row: the batch's bounded wait runs out and its
// members are attempted one by one. The others, whose rows exist and are
// free, are taken; once the other transaction ends, the member is too.
func TestBatchRowBeingInsertedFailsItsMemberAlone(t *testing.T) {
	t.Parallel()
	type store struct {
		open      func(t *testing.T) *sql.DB
		table     func(t *testing.T, db *sql.DB) string
		provider  func(t *testing.T, db *sql.DB, table string) shedlock.LockProvider
		insert    string
		selectFor string
	}
	mariadb := store{
		open:  func(t *testing.T) *sql.DB { return testdb.Open(t, nil) },
		table: func(t *testing.T, db *sql.DB) string { return testdb.NewFencedTable(t, db) },
		provider: func(t *testing.T, db *sql.DB, table string) shedlock.LockProvider {
			return newMySQLProvider(t, db, shedlock.WithTableName(table))
		},
		insert:    "INSERT INTO %s (name, lock_until, locked_at, locked_by) VALUES (?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), 'operator')",
		selectFor: "SELECT name FROM %s WHERE name = ? FOR UPDATE",
	}
	pg := store{
		open:  func(t *testing.T) *sql.DB { return testdb.OpenPostgres(t, testdb.PGX, nil) },
		table: func(t *testing.T, db *sql.DB) string { return testdb.NewFencedPostgresTable(t, db) },
		provider: func(t *testing.T, db *sql.DB, table string) shedlock.LockProvider {
			return newPostgresProvider(t, db, shedlock.WithTableName(table))
		},
		insert: "INSERT INTO %s (name, lock_until, locked_at, locked_by) VALUES ($1, now(), now(), 'operator')",
	}
	cases := map[string]struct {
		s   store
		sql func(s store) string
	}{
		"MariaDB/UncommittedInsert":           {mariadb, func(s store) string { return s.insert }},
		"MariaDB/SelectForUpdateOfMissingRow": {mariadb, func(s store) string { return s.selectFor }},
		"PostgreSQL/UncommittedInsert":        {pg, func(s store) string { return s.insert }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin := c.s.open(t)
			table := c.s.table(t, admin)
			p := c.s.provider(t, c.s.open(t), table).(shedlock.BatchLocker)
			for _, r := range mustBatch(t, p, batchOf("a", "z")) { // these rows exist, free
				require.NoError(t, r.Err)
				require.NoError(t, r.Lock.Unlock(ctx))
			}

			tx, err := admin.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer tx.Rollback()
			rows, err := tx.QueryContext(ctx, fmt.Sprintf(c.sql(c.s), table), "m-pending")
			require.NoError(t, err)
			rows.Close()

			deadline, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			start := time.Now()
			res, err := p.TryLockBatch(deadline, batchOf("a", "m-pending", "z"))
			t.Logf("batch returned after %v", time.Since(start).Round(time.Millisecond))
			require.NoError(t, err, "a row another transaction is making failed the whole batch")
			require.NoError(t, res[0].Err, "a: its row is free")
			assert.ErrorIs(t, res[1].Err, shedlock.ErrNotAcquired, "the pending row")
			require.NoError(t, res[2].Err, "z: its row is free")
			for _, i := range []int{0, 2} {
				require.NoError(t, res[i].Lock.Unlock(ctx))
			}
			require.NoError(t, tx.Rollback())
			for _, r := range mustBatch(t, p, batchOf("a", "m-pending", "z")) {
				require.NoError(t, r.Err, "the other transaction ended")
				require.NoError(t, r.Lock.Unlock(ctx))
			}
		})
	}
}
