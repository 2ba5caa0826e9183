package shedlockredis_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

func mustTake(t *testing.T, p shedlock.LockProvider, name string, atMost, atLeast time.Duration) shedlock.Lock {
	t.Helper()
	l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: name, LockAtMostFor: atMost, LockAtLeastFor: atLeast})
	require.NoError(t, err)
	return l
}

// TestAdminLocks: Locks and Inspect show each held lock as the server sees
// it: the holder, when it was taken, and the time left by the server's clock;
// a released lock still within LockAtLeastFor is held; a free one has no key.
func TestAdminLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)), shedlockredis.WithLockedBy("pod-a"))
	before := time.Now().UTC().Truncate(time.Millisecond)
	mustTake(t, p, "b-report", time.Minute, 0)
	kept := mustTake(t, p, "a-cleanup", time.Minute, 30*time.Second)
	require.NoError(t, kept.Unlock(ctx))
	require.NoError(t, mustTake(t, p, "c-gone", time.Minute, 0).Unlock(ctx))

	locks, err := p.Locks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, 2, "the released lock has no key")
	assert.Equal(t, "a-cleanup", locks[0].Name, "sorted by name")
	assert.Equal(t, "b-report", locks[1].Name)
	for _, l := range locks {
		assert.True(t, l.Held, l.Name)
		assert.True(t, strings.HasPrefix(l.LockedBy, "pod-a:"), "LockedBy %q: the owner, then the acquisition", l.LockedBy)
		assert.False(t, l.LockedAt.Before(before.Add(-time.Second)), "LockedAt %v", l.LockedAt)
		assert.Equal(t, time.UTC, l.LockedAt.Location())
		assert.Positive(t, l.TimeLeft)
		assert.False(t, l.LockUntil.IsZero())
	}
	assert.LessOrEqual(t, locks[0].TimeLeft, 30*time.Second, "released: kept only for LockAtLeastFor")
	assert.Greater(t, locks[1].TimeLeft, 30*time.Second)
	assert.NotEqual(t, locks[0].LockedBy, locks[1].LockedBy, "each acquisition its own")

	one, err := p.Inspect(ctx, "b-report")
	require.NoError(t, err)
	assert.Equal(t, locks[1].LockedBy, one.LockedBy)
	assert.True(t, one.LockedAt.Equal(locks[1].LockedAt))

	_, err = p.Inspect(ctx, "c-gone")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)
	assert.ErrorContains(t, err, "nobody holds it")
	_, err = p.Inspect(ctx, "")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)
}

// TestAdminReadsForeignValues: a Java pod's value gives its time and holder;
// a value of another form is the holder whole; a key without a time to live
// is held with no end.
func TestAdminReadsForeignValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	require.NoError(t, c.Set(ctx, p.Key("java"), "ADDED:2026-03-04T05:06:07.089Z@host-1:0b1c", time.Minute).Err())
	require.NoError(t, c.Set(ctx, p.Key("odd"), "someone's value", 0).Err())

	java, err := p.Inspect(ctx, "java")
	require.NoError(t, err)
	assert.Equal(t, "host-1:0b1c", java.LockedBy)
	assert.Equal(t, time.Date(2026, 3, 4, 5, 6, 7, 89e6, time.UTC), java.LockedAt)
	assert.True(t, java.Held)

	odd, err := p.Inspect(ctx, "odd")
	require.NoError(t, err)
	assert.Equal(t, "someone's value", odd.LockedBy)
	assert.True(t, odd.LockedAt.IsZero())
	assert.True(t, odd.Held)
	assert.Equal(t, time.Duration(-1), odd.TimeLeft, "no time to live")
	assert.True(t, odd.LockUntil.IsZero())

	taken, err := p.ForceUnlockSeen(ctx, java)
	require.NoError(t, err, "a Java pod's acquisition, as shown, is freed")
	assert.Equal(t, java.LockedBy, taken.LockedBy)
	_, err = p.ForceUnlockSeen(ctx, odd)
	require.NoError(t, err)
	assert.Zero(t, c.Exists(ctx, p.Key("java"), p.Key("odd")).Val())
}

// TestAdminForceUnlock: the key is deleted whoever holds it, the holder finds
// the lock lost, and another pod takes it at once.
func TestAdminForceUnlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newEnv(t)
	p := newProvider(t, newClient(t), shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-a"))
	other := newProvider(t, newClient(t), shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-b"))
	held := mustTake(t, p, "job", time.Minute, 0)
	shown, err := p.Inspect(ctx, "job")
	require.NoError(t, err)

	taken, err := other.ForceUnlock(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, shown.LockedBy, taken.LockedBy, "returns whom it was taken from")
	assert.True(t, taken.Held)
	require.ErrorIs(t, held.Extend(ctx, time.Minute, 0), shedlock.ErrLockLost, "the holder's next Extend")
	mustTake(t, other, "job", time.Minute, 0)

	_, err = p.ForceUnlock(ctx, "free")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)
	assert.ErrorContains(t, err, `"free"`)
}

// TestAdminForceUnlockSeen frees the acquisition shown, extended since or
// not, and never one taken since.
func TestAdminForceUnlockSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newEnv(t)
	p := newProvider(t, newClient(t), shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-a"))
	other := newProvider(t, newClient(t), shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-b"))

	t.Run("extended since", func(t *testing.T) {
		l := mustTake(t, p, "extended", time.Minute, 0)
		seen, err := p.Inspect(ctx, "extended")
		require.NoError(t, err)
		require.NoError(t, l.Extend(ctx, 2*time.Minute, 0))
		taken, err := other.ForceUnlockSeen(ctx, seen)
		require.NoError(t, err)
		assert.Greater(t, taken.TimeLeft, time.Minute, "returned as it was just before: extended")
		require.ErrorIs(t, l.Unlock(ctx), shedlock.ErrLockLost)
	})
	t.Run("taken since", func(t *testing.T) {
		first := mustTake(t, p, "retaken", time.Minute, 0)
		seen, err := p.Inspect(ctx, "retaken")
		require.NoError(t, err)
		require.NoError(t, first.Unlock(ctx))
		second := mustTake(t, other, "retaken", time.Minute, 0)
		_, err = p.ForceUnlockSeen(ctx, seen)
		require.ErrorIs(t, err, shedlock.ErrLockChanged)
		assert.ErrorContains(t, err, "pod-b:", "names the holder now")
		assert.ErrorContains(t, err, "nothing was freed")
		require.NoError(t, second.Unlock(ctx), "the new holder still holds it")
	})
	t.Run("gone", func(t *testing.T) {
		l := mustTake(t, p, "gone", time.Minute, 0)
		seen, err := p.Inspect(ctx, "gone")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
		_, err = p.ForceUnlockSeen(ctx, seen)
		require.ErrorIs(t, err, shedlock.ErrLockNotFound)
	})
}

// TestAdminHealthCheck: a server that takes locks passes, and EnsureTable has
// nothing to create; a replica, an evicting server and no server fail.
func TestAdminHealthCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, log := logged(t, serverAddr(t))
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	require.NoError(t, p.EnsureTable(ctx))
	assert.Empty(t, log.take(), "EnsureTable sends nothing")
	require.NoError(t, p.HealthCheck(ctx))
	require.NoError(t, p.HealthCheck(ctx))
	sent := fmt.Sprint(log.take())
	assert.Equal(t, 1, strings.Count(sent, "config get maxmemory"), "the first-use check once: %s", sent)

	primary := startServerFor(t, "")
	host, port, _ := net.SplitHostPort(primary.addr)
	replica := startServerFor(t, "", "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Addr: replica.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rc.Close() })
	err := newProvider(t, rc).HealthCheck(ctx)
	require.Error(t, err)
	assert.ErrorContains(t, err, "READONLY")

	err = newProvider(t, evictingServer(t, "allkeys-lru")).HealthCheck(ctx)
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)

	down := redis.NewClient(&redis.Options{Addr: closedAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	require.Error(t, newProvider(t, down, shedlockredis.WithEvictionAllowed()).HealthCheck(ctx))
}

// TestAdminCluster: Locks finds the locks on every primary of a Cluster, and
// the force unlocks reach each key's own.
func TestAdminCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: startCluster(t, 3), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	p := newProvider(t, c, shedlockredis.WithLockedBy("pod-a"))
	slots := map[int]bool{}
	var names []string
	for i := 0; len(names) < 12; i++ {
		name := fmt.Sprintf("job-%02d", i)
		names = append(names, name)
		slots[shedlockredis.Slot(p.Key(name))*3/16384] = true
		mustTake(t, p, name, time.Minute, 0)
	}
	require.Len(t, slots, 3, "the names reach every primary")

	locks, err := p.Locks(ctx)
	require.NoError(t, err)
	var got []string
	for _, l := range locks {
		got = append(got, l.Name)
	}
	assert.Equal(t, names, got)

	for _, l := range locks[:6] {
		_, err := p.ForceUnlockSeen(ctx, l)
		require.NoError(t, err, l.Name)
	}
	for _, l := range locks[6:] {
		_, err := p.ForceUnlock(ctx, l.Name)
		require.NoError(t, err, l.Name)
	}
	locks, err = p.Locks(ctx)
	require.NoError(t, err)
	assert.Empty(t, locks)
	require.NoError(t, p.HealthCheck(ctx))
}
