package integration_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// A paused job is refused on every attempt, by every provider, alone and in
// a batch, with ErrPaused; a held one that is not paused with ErrNotAcquired
// alone. Resume lets the next attempt take it.
func TestControlPauseRefusesEveryAttempt(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		a, b := c.newProvider(t), c.newProvider(t)
		l, err := a.TryLock(ctx, lockFor("job", time.Minute))
		require.NoError(t, err)
		_, err = b.TryLock(ctx, lockFor("job", time.Minute))
		requireHeldNotPaused(t, err, "held, not paused")
		require.NoError(t, l.Unlock(ctx))

		require.NoError(t, b.Pause(ctx, "job", time.Time{}))
		info, err := a.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.Equal(t, shedlock.Control{Paused: true}, info.Control, "paused until resumed")
		for i := range 5 {
			for _, p := range []controlProvider{a, b} {
				_, err := p.TryLock(ctx, lockFor("job", time.Minute))
				requirePaused(t, err, "attempt %d", i)
				res, err := p.TryLockBatch(ctx, []shedlock.LockConfig{lockFor("job", time.Minute), lockFor("other", time.Minute)})
				require.NoError(t, err)
				requirePaused(t, res[0].Err, "batch attempt %d", i)
				require.NoError(t, res[1].Err, "the batch's other member")
				require.NoError(t, res[1].Lock.Unlock(ctx))
			}
		}
		info, err = a.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.False(t, info.Held, "no attempt took the paused lock")

		require.NoError(t, a.Resume(ctx, "job"))
		require.NoError(t, a.Resume(ctx, "job"), "resuming a job that is not paused")
		l, err = b.TryLock(ctx, lockFor("job", time.Minute))
		require.NoError(t, err, "after Resume")
		info, err = a.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.Equal(t, shedlock.Control{}, info.Control)
		require.NoError(t, l.Unlock(ctx))
	})
}

// Pause on a name without a row makes the row, free and paused: the first
// attempt of every provider is refused, alone or in a batch of new names.
func TestControlPauseMakesTheRow(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		admin, a, b := c.newProvider(t), c.newProvider(t), c.newProvider(t)
		require.NoError(t, admin.Pause(ctx, "fresh", time.Time{}))
		require.NoError(t, admin.Pause(ctx, "fresh-batch", time.Time{}))
		info, err := admin.Inspect(ctx, "fresh")
		require.NoError(t, err)
		assert.False(t, info.Held, "the row Pause made is free")
		assert.True(t, info.Paused)

		_, err = a.TryLock(ctx, lockFor("fresh", time.Minute))
		requirePaused(t, err, "a name the provider never saw")
		res, err := b.TryLockBatch(ctx, []shedlock.LockConfig{lockFor("fresh-batch", time.Minute), lockFor("fresh-other", time.Minute)})
		require.NoError(t, err)
		requirePaused(t, res[0].Err, "a batch of names the provider never saw")
		require.NoError(t, res[1].Err)
		require.NoError(t, res[1].Lock.Unlock(ctx))
	})
}

// A pause until a time ends by the database's clock: refused before, taken
// after, and Inspect says when.
func TestControlPauseUntilExpires(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		p := c.newProvider(t)
		until := time.Now().Add(1500 * time.Millisecond)
		require.NoError(t, p.Pause(ctx, "job", until))
		info, err := p.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.True(t, info.Paused)
		assert.Equal(t, until.UnixMilli(), info.PausedUntil.UnixMilli(), "PausedUntil")
		_, err = p.TryLock(ctx, lockFor("job", time.Minute))
		requirePaused(t, err)

		var l shedlock.Lock
		eventually(t, 10*time.Second, "the pause ends", func() bool {
			l, err = p.TryLock(ctx, lockFor("job", time.Minute))
			if err != nil {
				requirePaused(t, err)
				return false
			}
			return true
		})
		assert.False(t, time.Now().Before(until.Add(-100*time.Millisecond)), "taken before the pause ended")
		info, err = p.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.Equal(t, shedlock.Control{}, info.Control, "a pause that ended")
		require.NoError(t, l.Unlock(ctx))

		require.ErrorIs(t, p.Pause(ctx, "job", time.Now().Add(-time.Second)), shedlock.ErrInvalidConfig, "an until that has passed")
	})
}

// A pause while the lock is held lets the run finish: its holder extends and
// releases it, and no one takes it after.
func TestControlPauseLetsTheRunFinish(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		a, b := c.newProvider(t), c.newProvider(t)
		l, err := a.TryLock(ctx, lockFor("job", time.Minute))
		require.NoError(t, err)
		require.NoError(t, b.Pause(ctx, "job", time.Time{}))
		_, err = b.TryLock(ctx, lockFor("job", time.Minute))
		requirePaused(t, err, "held and paused: the pause is the reason")
		require.NoError(t, l.Extend(ctx, 2*time.Minute, 0), "the run's keep-alive")
		require.NoError(t, l.Unlock(ctx), "the run's release")
		info, err := b.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.False(t, info.Held)
		for _, p := range []controlProvider{a, b} {
			_, err = p.TryLock(ctx, lockFor("job", time.Minute))
			requirePaused(t, err, "after the run")
		}
	})
}

// Each RunNow is one run: 100 requests, from two providers at once, are 100
// pending, and 100 runs, each under its own lock, mark them all done; the
// count never goes below 0.
func TestControlRunNowCounts(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		a, b := c.newProvider(t), c.newProvider(t)
		got, err := a.RunRequests(ctx, []string{"job", "other"})
		require.NoError(t, err)
		assert.Empty(t, got, "no row yet")

		var wg sync.WaitGroup
		for _, p := range []controlProvider{a, b} {
			wg.Go(func() {
				for range 50 {
					if _, err := p.RunNow(ctx, "job"); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		pending, err := a.RunNow(ctx, "other")
		require.NoError(t, err)
		assert.EqualValues(t, 1, pending, "RunNow on a name without a row")
		got, err = b.RunRequests(ctx, []string{"job", "other", "none"})
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"job": 100, "other": 1}, got)
		info, err := a.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.EqualValues(t, 100, info.RunRequests)
		assert.False(t, info.Held, "the row RunNow made is free")

		runs := 0
		for {
			got, err := a.RunRequests(ctx, []string{"job"})
			require.NoError(t, err)
			if got["job"] == 0 {
				break
			}
			p := []controlProvider{a, b}[runs%2]
			l, err := p.TryLock(ctx, lockFor("job", time.Minute))
			require.NoError(t, err)
			runs++
			require.NoError(t, p.RunDone(ctx, "job", l))
			require.NoError(t, l.Unlock(ctx))
			require.LessOrEqual(t, runs, 100, "more runs than requests")
		}
		assert.Equal(t, 100, runs)
		l, err := a.TryLock(ctx, lockFor("job", time.Minute))
		require.NoError(t, err)
		require.NoError(t, a.RunDone(ctx, "job", l), "a run done with none pending")
		require.NoError(t, l.Unlock(ctx))
		info, err = a.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.Zero(t, info.RunRequests)
		pending, err = a.RunNow(ctx, "job")
		require.NoError(t, err)
		assert.EqualValues(t, 1, pending, "the next request after one too many dones")
	})
}

// RunDone counts a run only while its lock holds: not after the lock
// expired, nor once another took it, nor after its release; nor with a lock
// of another name; and one acquisition counts one run, whichever provider
// is asked.
func TestControlRunDoneRefusedForALostLock(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		a, b := c.newProvider(t), c.newProvider(t)
		_, err := a.RunNow(ctx, "job")
		require.NoError(t, err)
		pending := func() int64 {
			got, err := a.RunRequests(ctx, []string{"job"})
			require.NoError(t, err)
			return got["job"]
		}

		short, err := a.TryLock(ctx, lockFor("job", 300*time.Millisecond))
		require.NoError(t, err)
		eventually(t, 10*time.Second, "the short lock expires", func() bool {
			info, err := b.Inspect(ctx, "job")
			require.NoError(t, err)
			return !info.Held
		})
		require.ErrorIs(t, a.RunDone(ctx, "job", short), shedlock.ErrLockLost, "expired, not taken")
		taken, err := b.TryLock(ctx, lockFor("job", time.Minute))
		require.NoError(t, err)
		require.ErrorIs(t, a.RunDone(ctx, "job", short), shedlock.ErrLockLost, "taken by another")
		assert.EqualValues(t, 1, pending(), "no run counted")

		require.ErrorIs(t, b.RunDone(ctx, "other", taken), shedlock.ErrInvalidConfig, "another name's lock")
		require.NoError(t, a.RunDone(ctx, "job", taken), "a run under another provider's lock")
		assert.EqualValues(t, 0, pending(), "the run counted")
		_, err = a.RunNow(ctx, "job")
		require.NoError(t, err)
		require.NoError(t, b.RunDone(ctx, "job", taken), "the same run again")
		assert.EqualValues(t, 1, pending(), "one acquisition marks one run")
		require.NoError(t, taken.Unlock(ctx))
		require.ErrorIs(t, b.RunDone(ctx, "job", taken), shedlock.ErrLockLost, "released")
		assert.EqualValues(t, 1, pending(), "no run counted")
	})
}

// A table without migration 0004 keeps working: locks as before, no run
// requests, and Pause, Resume and RunNow fail naming the migration.
func TestControlWithoutTheMigration(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, false, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		p := c.newProvider(t)
		l, err := p.TryLock(ctx, lockFor("job", time.Minute))
		require.NoError(t, err)
		got, err := p.RunRequests(ctx, []string{"job"})
		require.NoError(t, err)
		assert.Empty(t, got)
		for what, err := range map[string]error{
			"Pause":   p.Pause(ctx, "job", time.Time{}),
			"Resume":  p.Resume(ctx, "job"),
			"RunNow":  func() error { _, err := p.RunNow(ctx, "job"); return err }(),
			"RunDone": p.RunDone(ctx, "job", l),
		} {
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore, what)
			require.ErrorContains(t, err, "0004_add_control", what)
		}
		require.NoError(t, l.Unlock(ctx))
		info, err := p.Inspect(ctx, "job")
		require.NoError(t, err)
		assert.Equal(t, shedlock.Control{}, info.Control)
	})
}

// Java ShedLock's statements, which name none of the new columns, work on
// the migrated table: its INSERT makes a lock that Go pods respect, and its
// UPDATE takes a free row even while paused (Java pods do not honour a
// pause, as documented).
func TestControlJavaStatementsOnTheMigratedTable(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		p := c.newProvider(t)
		require.EqualValues(t, 1, c.exec(t, c.javaInsert, "java-job"))
		_, err := p.TryLock(ctx, lockFor("java-job", time.Minute))
		requireHeldNotPaused(t, err, "Java's lock")
		locks, err := p.Locks(ctx)
		require.NoError(t, err)
		require.Len(t, locks, 1)
		assert.Equal(t, "java-pod", locks[0].LockedBy)
		assert.Equal(t, shedlock.Control{}, locks[0].Control)

		require.NoError(t, p.Pause(ctx, "paused", time.Time{}))
		require.EqualValues(t, 1, c.exec(t, c.javaUpdate, "paused"), "Java's UPDATE ignores the pause")
		info, err := p.Inspect(ctx, "paused")
		require.NoError(t, err)
		assert.True(t, info.Held)
		assert.True(t, info.Paused)
	})
}

// CatchUp's acquisition refuses a paused job too, in its own statement, and
// its fire time runs once resumed; a held lock is ErrNotAcquired alone.
func TestControlPauseRefusesCatchUp(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		a, b := c.newProvider(t), c.newProvider(t)
		fa, fb := a.(shedlock.FireLocker), b.(shedlock.FireLocker)
		fire := time.Now().Truncate(time.Second)
		l, err := fa.TryLockFire(ctx, lockFor("nightly", time.Minute), fire)
		require.NoError(t, err)
		_, err = fb.TryLockFire(ctx, lockFor("nightly", time.Minute), fire.Add(time.Second))
		requireHeldNotPaused(t, err, "held")
		require.NoError(t, b.Pause(ctx, "nightly", time.Time{}))
		_, err = fb.TryLockFire(ctx, lockFor("nightly", time.Minute), fire.Add(time.Second))
		requirePaused(t, err, "held and paused")
		require.NoError(t, l.UnlockSucceeded(ctx, 0), "the run under way records its fire time")
		for _, f := range []shedlock.FireLocker{fa, fb} {
			_, err = f.TryLockFire(ctx, lockFor("nightly", time.Minute), fire.Add(time.Second))
			requirePaused(t, err, "free and paused")
		}
		require.NoError(t, b.Pause(ctx, "new-nightly", time.Time{}))
		_, err = fa.TryLockFire(ctx, lockFor("new-nightly", time.Minute), fire)
		requirePaused(t, err, "a name the provider never saw, paused before its first run")

		require.NoError(t, a.Resume(ctx, "nightly"))
		l, err = fb.TryLockFire(ctx, lockFor("nightly", time.Minute), fire.Add(time.Second))
		require.NoError(t, err, "resumed")
		_, fenced := shedlock.FenceOf(l)
		assert.True(t, fenced, "a fencing token")
		require.NoError(t, l.UnlockSucceeded(ctx, 0))
		_, err = fa.TryLockFire(ctx, lockFor("nightly", time.Minute), fire.Add(time.Second))
		requireHeldNotPaused(t, err, "a fire time done is not taken again, and is not a pause")
		last, ok, err := fa.LastFire(ctx, "nightly")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, fire.Add(time.Second).UnixMilli(), last.UnixMilli())
	})
}

// RunRequests whose statement fails (here, its context ended) returns the
// error, as an executor stopping meets it.
func TestControlRunRequestsStatementFails(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		p := c.newProvider(t)
		_, err := p.RunRequests(context.Background(), []string{"job"}) // first use, and its statement prepared
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = p.RunRequests(ctx, []string{"job"})
		require.ErrorIs(t, err, context.Canceled)
	})
}
