package integration_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/migrations"
)

// SQLite's own clock has milliseconds: a row deleted by hand and taken again
// within one millisecond got the token of the acquisition before. Deleting
// and taking again in a loop, on a file that does not wait for the disk, puts
// many of them within one millisecond; each token must still be larger than
// the last, by a fresh provider's TryLock and by a batch (which makes the row
// again in its one statement).
func TestSQLiteFenceGrowsAcrossRowsDeletedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "locks.db")
	const params = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)"
	admin := openSQLite(t, file, params)
	for _, f := range []string{"0001_create_shedlock.up.sql", "0002_add_fence.up.sql"} {
		b, err := fs.ReadFile(migrations.SQLite, f)
		require.NoError(t, err)
		_, err = admin.Exec(string(b))
		require.NoError(t, err)
	}
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	batcher := newSQLiteProvider(t, openSQLite(t, file, params))
	fresh := make([]*shedlock.SQLiteProvider, 100)
	for i := range fresh { // pools opened ahead, so that the loop is quick
		fresh[i] = newSQLiteProvider(t, openSQLite(t, file, params))
	}
	var last int64
	start := time.Now()
	for i := range 200 {
		var l shedlock.Lock
		if i%2 == 0 {
			var err error
			l, err = fresh[i/2].TryLock(ctx, cfg)
			require.NoError(t, err)
		} else {
			res, err := batcher.TryLockBatch(ctx, []shedlock.LockConfig{cfg})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
			l = res[0].Lock
		}
		f, ok := shedlock.FenceOf(l)
		require.True(t, ok)
		require.Greater(t, f, last, "acquisition %d after the row was deleted by hand", i)
		last = f
		_, err := admin.Exec("DELETE FROM shedlock")
		require.NoError(t, err)
	}
	t.Logf("200 acquisitions of a row deleted each time in %v", time.Since(start))
}
