package topology_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// The batch statement goes through PgBouncer in transaction pooling with
// every driver mode that carries nothing across round trips: two pods' batches
// on one table take the free locks and refuse the held ones, and the pooler
// checks of the first use let them through.
func TestPgBouncerTransactionPoolingBatch(t *testing.T) {
	t.Parallel()
	for _, m := range pgModes {
		if !m.safe {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := testdb.PgBouncer(t, privatedb.PoolTransaction, 2)
			table := testdb.NewFencedPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
			pod := func(i int) shedlock.BatchLocker {
				db, err := sql.Open(m.driver, b.URL(m.params))
				require.NoError(t, err)
				db.SetMaxOpenConns(3)
				t.Cleanup(func() { _ = db.Close() })
				p, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName(table), shedlock.WithLockedBy(fmt.Sprintf("pod%d", i)))
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
				return p
			}
			a, c := pod(0), pod(1)
			cfgs := make([]shedlock.LockConfig, 50)
			for i := range cfgs {
				cfgs[i] = shedlock.LockConfig{Name: fmt.Sprintf("job-%02d", i), LockAtMostFor: time.Minute}
			}
			ctx := context.Background()
			held, err := a.TryLockBatch(ctx, cfgs)
			require.NoError(t, err)
			for i, r := range held {
				require.NoError(t, r.Err, "entry %d", i)
			}
			res, err := c.TryLockBatch(ctx, cfgs)
			require.NoError(t, err)
			for i, r := range res {
				require.ErrorIs(t, r.Err, shedlock.ErrNotAcquired, "entry %d, held by the other pod", i)
			}
			for _, r := range held {
				require.NoError(t, r.Lock.Unlock(ctx))
			}
			res, err = c.TryLockBatch(ctx, cfgs)
			require.NoError(t, err)
			for i, r := range res {
				require.NoError(t, r.Err, "entry %d, released", i)
			}
		})
	}
}
