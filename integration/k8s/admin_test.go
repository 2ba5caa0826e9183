package k8s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// Admin on Leases: Locks lists the env's locks, held or not, by name;
// Inspect reads one; ForceUnlock frees it, and the holder's next Extend
// finds it lost; ForceUnlockSeen frees only the acquisition it was shown.
func TestAdmin(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	env := newEnv()
	a := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-a")
	b := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-b")
	other := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, newEnv(), "pod-c")

	_, err := a.Inspect(ctx, "report")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)
	_, err = a.ForceUnlock(ctx, "report")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)

	held, err := a.TryLock(ctx, shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	free, err := a.TryLock(ctx, shedlock.LockConfig{Name: "Compact Tables!", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	require.NoError(t, free.Unlock(ctx))
	_, err = other.TryLock(ctx, shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
	require.NoError(t, err, "another env's lock of the same name is another Lease")

	locks, err := b.Locks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, 2, "the env's locks only")
	assert.Equal(t, "Compact Tables!", locks[0].Name)
	assert.False(t, locks[0].Held)
	assert.Equal(t, "report", locks[1].Name)
	assert.True(t, locks[1].Held)
	assert.True(t, strings.HasPrefix(locks[1].LockedBy, "pod-a#"), locks[1].LockedBy)
	assert.InDelta(t, time.Minute, locks[1].TimeLeft, float64(5*time.Second))
	assert.WithinDuration(t, time.Now(), locks[1].LockedAt, 5*time.Second)

	seen, err := b.Inspect(ctx, "report")
	require.NoError(t, err)
	assert.Equal(t, locks[1].LockedBy, seen.LockedBy)

	// The holder extends: still the acquisition seen, freed.
	require.NoError(t, held.Extend(ctx, time.Minute, 0))
	was, err := b.ForceUnlockSeen(ctx, seen)
	require.NoError(t, err)
	assert.Equal(t, seen.LockedBy, was.LockedBy)
	require.ErrorIs(t, held.Extend(ctx, time.Minute, 0), shedlock.ErrLockLost)
	after, err := b.Inspect(ctx, "report")
	require.NoError(t, err)
	assert.False(t, after.Held)
	assert.Equal(t, shedlock.ForceUnlockedBy, after.LockedBy)

	// A newer acquisition is not the one seen: nothing is freed.
	next, err := b.TryLock(ctx, shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	_, err = a.ForceUnlockSeen(ctx, seen)
	require.ErrorIs(t, err, shedlock.ErrLockChanged)
	require.NoError(t, next.Extend(ctx, time.Minute, 0), "the newer holder keeps its lock")

	was, err = a.ForceUnlock(ctx, "report")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(was.LockedBy, "pod-b#"), was.LockedBy)
	require.ErrorIs(t, next.Unlock(ctx), shedlock.ErrLockLost)
	l, err := a.TryLock(ctx, shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
	require.NoError(t, err, "free at once after a forced unlock")
	require.NoError(t, l.Unlock(ctx))
}
