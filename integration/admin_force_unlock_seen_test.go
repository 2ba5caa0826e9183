package integration_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// An operator shown one holder frees that acquisition, never a newer one: after
// the holder released and another pod took the lock, ForceUnlockSeen frees
// nothing and says who holds it now; an acquisition extended since it was seen
// is still the one shown, and is freed.
func TestAdminForceUnlockSeenFreesOnlyWhatWasShown(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin, podA, podB := tbl.pod(t), tbl.pod(t), tbl.pod(t)
		cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

		lockA, err := podA.TryLock(ctx, cfg)
		require.NoError(t, err)
		seen, err := admin.Inspect(ctx, cfg.Name)
		require.NoError(t, err)
		require.NoError(t, lockA.Unlock(ctx))
		lockB, err := podB.TryLock(ctx, cfg)
		require.NoError(t, err)

		_, err = admin.ForceUnlockSeen(ctx, seen)
		require.ErrorIs(t, err, shedlock.ErrLockChanged)
		assert.ErrorContains(t, err, podB.LockedBy(), "the error names the holder now")
		_, err = podA.TryLock(ctx, cfg)
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "pod B still holds the lock")

		seenB, err := admin.Inspect(ctx, cfg.Name)
		require.NoError(t, err)
		require.NoError(t, lockB.Extend(ctx, 2*time.Minute, 0))
		freed, err := admin.ForceUnlockSeen(ctx, seenB)
		require.NoError(t, err, "an extended acquisition is still the one shown")
		assert.Equal(t, seenB.LockedBy, freed.LockedBy)
		assert.True(t, freed.LockUntil.After(seenB.LockUntil), "returned as it was just before: extended")
		require.ErrorIs(t, lockB.Unlock(ctx), shedlock.ErrLockLost)
		_, err = podA.TryLock(ctx, cfg)
		require.NoError(t, err, "freed")
	})
}

// ForceUnlock says truthfully whom it took the lock from: while a pod takes and
// releases the lock as fast as it can, every ForceUnlock that reports a held
// lock names an acquisition whose own Unlock then finds the lock lost. Before
// ForceUnlock compared lock_until too, it named holders that had already
// released (97 of 1,474 calls on MySQL).
func TestAdminForceUnlockReportsTheHolderItFreed(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin, pod := tbl.pod(t), tbl.pod(t)
		inspector := tbl.pod(t)
		cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
		deadline := time.Now().Add(3 * time.Second)

		var mu sync.Mutex
		released := map[string]bool{} // holder -> its own Unlock succeeded
		var wg sync.WaitGroup
		wg.Go(func() {
			for time.Now().Before(deadline) {
				l, err := pod.TryLock(ctx, cfg)
				if errors.Is(err, shedlock.ErrNotAcquired) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				info, err := inspector.Inspect(ctx, cfg.Name)
				if !assert.NoError(t, err) {
					return
				}
				err = l.Unlock(ctx)
				mu.Lock()
				if info.LockedBy != shedlock.ForceUnlockedBy {
					released[info.LockedBy] = err == nil
				}
				mu.Unlock()
			}
		})
		var reported []string
		for time.Now().Before(deadline) {
			taken, err := admin.ForceUnlock(ctx, cfg.Name)
			if errors.Is(err, shedlock.ErrLockNotFound) || errors.Is(err, shedlock.ErrLockChanged) {
				continue // not yet made, or moving too fast to free: no report either way
			}
			require.NoError(t, err)
			if taken.Held {
				reported = append(reported, taken.LockedBy)
			}
		}
		wg.Wait()
		wrong := 0
		for _, by := range reported {
			if ok, seen := released[by]; seen && ok {
				wrong++
			}
		}
		t.Logf("%d force unlocks reported a held lock; %d acquisitions", len(reported), len(released))
		assert.Zero(t, wrong, "force unlocks that reported taking the lock from a holder whose own Unlock then succeeded")
	})
}
