package shedlockredis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestControlConformance(t *testing.T) {
	shedlocktest.RunControl(t, newStore)
}

// TestControlConformanceCluster: the same on a Cluster of three primaries,
// where each name's keys must share its slot and Locks reads every node.
func TestControlConformanceCluster(t *testing.T) {
	addrs := startCluster(t, 3)
	var n atomic.Int64
	shedlocktest.RunControl(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		env := fmt.Sprintf("control-%d", n.Add(1))
		return func(t *testing.T) shedlock.LockProvider {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			return newProvider(t, c, shedlockredis.WithEnv(env))
		}
	})
}

// TestPauseCostsNoRoundTrip: an attempt on a paused name is one EVALSHA, as
// on a free or a held one, for TryLock, a batch and a fire time: the pause is
// read inside the acquiring script, from the key beside the lock's.
func TestPauseCostsNoRoundTrip(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	c, log := logged(t, serverAddr(t))
	p := newProvider(t, c, shedlockredis.WithEnv(env))
	operator := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	ctx := context.Background()
	_, err := p.TryLock(ctx, minute("warm")) // the eviction check, out of the count
	require.NoError(t, err)
	_, err = p.TryLockFire(ctx, minute("warm-fire"), time.Now())
	require.NoError(t, err)
	mustBatch(t, p, minute("warm-1"), minute("warm-2"))
	require.NoError(t, operator.Pause(ctx, "job", time.Time{}))

	oneScript := func(what string, wantKeys ...string) {
		t.Helper()
		sent := log.take()
		require.Len(t, sent, 1, "%s: commands sent %v", what, sent)
		assert.Equal(t, "evalsha", sent[0][0], what)
		keys := map[string]bool{}
		numKeys, _ := sent[0][2].(int)
		for _, k := range sent[0][3 : 3+numKeys] {
			keys[k.(string)] = true
		}
		for _, k := range wantKeys {
			assert.True(t, keys[k], "%s: the script is sent %s", what, k)
		}
	}
	paused := shedlockredis.PausedKey(p.Key("job"))
	log.take()
	for range 3 {
		_, err = p.TryLock(ctx, minute("job"))
		require.ErrorIs(t, err, shedlock.ErrPaused)
		oneScript("TryLock", p.Key("job"), paused)
	}
	res := mustBatch(t, p, minute("free"), minute("job"))
	require.NoError(t, res[0].Err)
	require.ErrorIs(t, res[1].Err, shedlock.ErrPaused)
	oneScript("TryLockBatch", p.Key("job"), paused, p.Key("free"))
	_, err = p.TryLockFire(ctx, minute("job"), time.Now())
	require.ErrorIs(t, err, shedlock.ErrPaused)
	oneScript("TryLockFire", p.Key("job"), paused)

	// A held name costs the same: the pause adds no command.
	_, err = p.TryLock(ctx, minute("free"))
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	oneScript("TryLock of a held name")
}

// TestControlKeys: the pause and run-now keys are beside the lock's, in its
// Cluster slot, with a time to live only for a pause until a time; a name
// that can have none cannot be paused.
func TestControlKeys(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(env))
	ctx := context.Background()
	for _, name := range []string{"job", "a{grp}b"} {
		key := p.Key(name)
		for _, k := range []string{shedlockredis.PausedKey(key), shedlockredis.RunsKey(key)} {
			require.NotEmpty(t, k)
			assert.Equal(t, shedlockredis.Slot(key), shedlockredis.Slot(k), "%s beside %s", k, key)
		}
	}
	key := p.Key("job")
	assert.Equal(t, "{"+key+"}:paused", shedlockredis.PausedKey(key))
	assert.Equal(t, "{"+key+"}:runs", shedlockredis.RunsKey(key))
	assert.Equal(t, "{grp}:paused:"+p.Key("a{grp}b"), shedlockredis.PausedKey(p.Key("a{grp}b")))

	until := time.Now().Add(time.Hour)
	require.NoError(t, p.Pause(ctx, "job", until))
	pttl, err := c.PTTL(ctx, shedlockredis.PausedKey(key)).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Seconds(), pttl.Seconds(), 5, "a pause until a time ends by its time to live")
	require.NoError(t, p.Pause(ctx, "job", time.Time{}))
	pttl, err = c.PTTL(ctx, shedlockredis.PausedKey(key)).Result()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), pttl, "a pause until Resume has no time to live")
	require.NoError(t, p.Resume(ctx, "job"))
	assert.Zero(t, c.Exists(ctx, shedlockredis.PausedKey(key)).Val(), "Resume deletes the key")

	_, err = p.RunNow(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, "1", c.HGet(ctx, shedlockredis.RunsKey(key), "n").Val())

	assert.Empty(t, shedlockredis.PausedKey(p.Key("x}y")))
	require.ErrorIs(t, p.Pause(ctx, "x}y", time.Time{}), shedlock.ErrInvalidConfig)
	_, err = p.RunNow(ctx, "x}y")
	require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
}

// TestPausedNameListedWithoutLock: a paused name no one holds is listed by
// Locks, and has no lock to free.
func TestPausedNameListedWithoutLock(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	ctx := context.Background()
	require.NoError(t, p.Pause(ctx, "only-paused", time.Time{}))
	locks, err := p.Locks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	assert.Equal(t, "only-paused", locks[0].Name)
	assert.True(t, locks[0].Paused)
	assert.False(t, locks[0].Held)
	_, err = p.ForceUnlock(ctx, "only-paused")
	assert.ErrorIs(t, err, shedlock.ErrLockNotFound, "a paused name no one holds has no lock to free")
}
