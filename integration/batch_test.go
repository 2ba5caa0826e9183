package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

func batchOf(names ...string) []shedlock.LockConfig {
	cfgs := make([]shedlock.LockConfig, len(names))
	for i, n := range names {
		cfgs[i] = shedlock.LockConfig{Name: n, LockAtMostFor: time.Minute}
	}
	return cfgs
}

func mustBatch(t *testing.T, p shedlock.LockProvider, cfgs []shedlock.LockConfig) []shedlock.LockResult {
	t.Helper()
	b, ok := p.(shedlock.BatchLocker)
	require.True(t, ok, "%T is not a BatchLocker", p)
	res, err := b.TryLockBatch(context.Background(), cfgs)
	require.NoError(t, err)
	require.Len(t, res, len(cfgs))
	return res
}

// On every SQL store, with and without the fence column: a batch of new names
// takes them all, each with its own token; a batch where some are held takes
// exactly the free ones; a bad config is its entry's error and a duplicate
// the batch's; the locks release (honouring LockAtLeastFor) and extend as
// TryLock's do; and a row deleted by hand is made again by the next batch.
func TestBatchSQLStores(t *testing.T) {
	t.Parallel()
	for _, s := range fenceStores() {
		for _, fenced := range []bool{true, false} {
			name := s.name
			if !fenced {
				name += "/JavaTable"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testBatchSQLStore(t, s.table(t, fenced), fenced)
			})
		}
	}
}

func testBatchSQLStore(t *testing.T, tbl fenceTable, fenced bool) {
	ctx := context.Background()
	a, b := tbl.newProvider(t), tbl.newProvider(t)

	// A fence per name, larger than the name's earlier acquisition by TryLock.
	before, err := b.TryLock(ctx, shedlock.LockConfig{Name: "n1", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	f0, _ := shedlock.FenceOf(before)
	require.NoError(t, before.Unlock(ctx))

	fresh := mustBatch(t, a, batchOf("n3", "n1", "n2"))
	fences := map[int64]bool{}
	for i, r := range fresh {
		require.NoError(t, r.Err, "entry %d", i)
		f, ok := shedlock.FenceOf(r.Lock)
		assert.Equal(t, fenced, ok, "a fencing token")
		fences[f] = true
	}
	if fenced {
		f1, _ := shedlock.FenceOf(fresh[1].Lock)
		assert.Greater(t, f1, f0, "n1's token after its TryLock's")
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		_, err := b.TryLock(ctx, shedlock.LockConfig{Name: n, LockAtMostFor: time.Minute})
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "%s, taken by a batch", n)
	}

	// Some held: exactly the free ones are taken, results in order.
	bad := shedlock.LockConfig{Name: "bad", LockAtMostFor: 0}
	mixed := mustBatch(t, b, append(batchOf("n2", "m1", "n3", "m2"), bad))
	assert.ErrorIs(t, mixed[0].Err, shedlock.ErrNotAcquired)
	assert.NoError(t, mixed[1].Err)
	assert.ErrorIs(t, mixed[2].Err, shedlock.ErrNotAcquired)
	assert.NoError(t, mixed[3].Err)
	assert.ErrorIs(t, mixed[4].Err, shedlock.ErrInvalidConfig)
	assert.Nil(t, mixed[0].Lock)
	assert.Nil(t, mixed[4].Lock)

	_, err = a.(shedlock.BatchLocker).TryLockBatch(ctx, batchOf("x", "y", "x"))
	require.ErrorIs(t, err, shedlock.ErrInvalidConfig, "a name twice in one batch")

	// Release and extend are TryLock's: n2 released at once, n3 kept for its
	// LockAtLeastFor, n1 extended and released later.
	least := mustBatch(t, a, []shedlock.LockConfig{{Name: "least", LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute}})
	require.NoError(t, least[0].Err)
	require.NoError(t, least[0].Lock.Unlock(ctx))
	_, err = b.TryLock(ctx, shedlock.LockConfig{Name: "least", LockAtMostFor: time.Minute})
	assert.ErrorIs(t, err, shedlock.ErrNotAcquired, "released within its LockAtLeastFor")

	require.NoError(t, fresh[2].Lock.Unlock(ctx))
	taken := mustBatch(t, b, batchOf("n2"))
	require.NoError(t, taken[0].Err, "n2 after its batch lock's release")
	if fenced {
		f2, _ := shedlock.FenceOf(fresh[2].Lock)
		g2, _ := shedlock.FenceOf(taken[0].Lock)
		assert.Greater(t, g2, f2)
	}
	require.ErrorIs(t, fresh[2].Lock.Unlock(ctx), shedlock.ErrLockLost, "a second Unlock")

	kept, _ := shedlock.FenceOf(fresh[1].Lock)
	require.NoError(t, fresh[1].Lock.Extend(ctx, 2*time.Minute, 0))
	f, _ := shedlock.FenceOf(fresh[1].Lock)
	assert.Equal(t, kept, f, "Extend keeps the token")
	require.NoError(t, fresh[1].Lock.Unlock(ctx))
	require.ErrorIs(t, fresh[1].Lock.Extend(ctx, time.Minute, 0), shedlock.ErrLockLost, "Extend after Unlock")

	// Rows deleted by hand are made again, with larger tokens.
	tbl.exec(t, "DELETE FROM "+tbl.quoted)
	again := mustBatch(t, a, batchOf("n1", "n2", "n3"))
	for i, r := range again {
		require.NoError(t, r.Err, "entry %d after the rows were deleted", i)
		if fenced {
			f, _ := shedlock.FenceOf(r.Lock)
			for old := range fences {
				assert.Greater(t, f, old, "token of %d after its row was deleted", i)
			}
		}
	}
}

// A first tick of many new names: one batch takes them all.
func TestBatchManyNewNames(t *testing.T) {
	t.Parallel()
	for _, s := range fenceStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			tbl := s.table(t, true)
			names := make([]string, 300)
			for i := range names {
				names[i] = fmt.Sprintf("job-%03d, \"quoted\" {brace} 🔒 \\", i)
			}
			for i, r := range mustBatch(t, tbl.newProvider(t), batchOf(names...)) {
				require.NoError(t, r.Err, "entry %d", i)
			}
			for i, r := range mustBatch(t, tbl.newProvider(t), batchOf(names...)) {
				require.ErrorIs(t, r.Err, shedlock.ErrNotAcquired, "entry %d, held", i)
			}
		})
	}
}
