package shedlockredis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

func TestFenceKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"job-lock:default:job":      "{job-lock:default:job}:fence",
		"job-lock:default:a{b":      "{job-lock:default:a{b}:fence",
		"job-lock:default:a{tag}b":  "{tag}:fence:job-lock:default:a{tag}b",
		"job-lock:default:a{{t}}":   "{{t}:fence:job-lock:default:a{{t}}",
		"job-lock:default:a{}b":     "", // an empty tag is no tag, and the key has a }
		"job-lock:default:a}b{":     "",
		"job-lock:default:a}b{tag}": "{tag}:fence:job-lock:default:a}b{tag}",
	} {
		assert.Equal(t, want, shedlockredis.FenceKey(key), "FenceKey(%q)", key)
	}
}

// mustFence takes cfg's lock on p and returns it with its token.
func mustFence(t *testing.T, p shedlock.LockProvider, cfg shedlock.LockConfig) (shedlock.Lock, int64) {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	f, ok := shedlock.FenceOf(l)
	require.True(t, ok, "a lock carries a token")
	return l, f
}

// Every acquisition's token is larger than the one before it: by another
// provider, after the lock ran out, after the lock's key was deleted by hand,
// after its fence key was lost with it, after a Java ShedLock pod took the lock
// in between; Extend keeps it.
func TestFenceIncreases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	a, b := newProvider(t, c), newProvider(t, newClient(t))
	name := uniqueName(t, c)
	cfg := shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	var last int64
	next := func(why string, f int64) {
		t.Helper()
		assert.Greater(t, f, last, "token after %s", why)
		t.Logf("%-34s %d", why, f)
		last = f
	}

	l, f := mustFence(t, a, cfg)
	next("first acquisition", f)
	require.NoError(t, l.Extend(ctx, time.Minute, 0))
	kept, ok := shedlock.FenceOf(l)
	require.True(t, ok)
	assert.Equal(t, f, kept, "Extend keeps the acquisition's token")
	_, err := b.TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	require.NoError(t, l.Unlock(ctx))

	for i := range 5 {
		l, f = mustFence(t, []shedlock.LockProvider{a, b}[i%2], cfg)
		next(fmt.Sprintf("provider %c", "ab"[i%2]), f)
		require.NoError(t, l.Unlock(ctx))
	}

	_, f = mustFence(t, a, shedlock.LockConfig{Name: name, LockAtMostFor: 50 * time.Millisecond})
	next("a lock left to run out", f)
	var taken shedlock.Lock
	require.Eventually(t, func() bool {
		taken, err = b.TryLock(ctx, cfg)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	f, _ = shedlock.FenceOf(taken)
	next("taken over after it ran out", f)

	key := a.Key(name)
	require.NoError(t, c.Del(ctx, key).Err())
	l, f = mustFence(t, a, cfg)
	next("the key deleted by hand", f)

	require.NoError(t, c.Del(ctx, key, shedlockredis.FenceKey(key)).Err())
	l, f = mustFence(t, b, cfg)
	next("both keys lost (as to FLUSHALL)", f)
	require.NoError(t, l.Unlock(ctx))

	java := &javaPod{c: c, host: "java-pod"}
	jl, ok, err := java.lock(ctx, name, time.Minute, 0)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = a.TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Java's lock excludes Go's")
	_, err = jl.unlock(ctx)
	require.NoError(t, err)
	l, f = mustFence(t, a, cfg)
	next("after a Java pod's acquisition", f)
	require.NoError(t, l.Unlock(ctx))

	// A token ahead of the clock, as one written before the server's clock
	// stepped back an hour: the next is still larger. (Losing both keys now
	// would lose it: see the README.)
	last += time.Hour.Microseconds()
	require.NoError(t, c.Set(ctx, shedlockredis.FenceKey(key), last, 0).Err())
	l, f = mustFence(t, a, cfg)
	next("a token an hour ahead of the clock", f)
	require.NoError(t, l.Unlock(ctx))

	ex := shedlock.NewExecutor(b)
	t.Cleanup(func() { _ = ex.Stop(ctx) })
	var inTask int64
	ran, err := ex.Run(ctx, cfg, func(ctx context.Context) error {
		var ok bool
		if inTask, ok = shedlock.FenceFromContext(ctx); !ok {
			return fmt.Errorf("no fence in the task's context")
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)
	next("an executor's run", inTask)
}

// On a Cluster the fence key is in the lock key's slot, for names with and
// without a hash tag; a name whose key has a } outside any tag locks without a
// token.
func TestFenceCluster(t *testing.T) {
	t.Parallel()
	node := startServerFor(t, "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	admin := redis.NewClient(&redis.Options{Addr: node.addr})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	waitFor(t, "the cluster to be ready", 30*time.Second, func(ctx context.Context) (bool, error) {
		info, err := admin.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok"), err
	})
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{node.addr}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	p := newProvider(t, c)
	for _, name := range []string{"plain", "a{tag}b", "a{b", "a}b"} {
		key := p.Key(name)
		fk := shedlockredis.FenceKey(key)
		if fk != "" {
			assert.Equal(t, admin.ClusterKeySlot(ctx, key).Val(), admin.ClusterKeySlot(ctx, fk).Val(), "slots of %q and %q", key, fk)
		}
		var last int64
		for range 3 {
			l, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
			require.NoError(t, err, name)
			f, ok := shedlock.FenceOf(l)
			assert.Equal(t, fk != "", ok, "a token for %q", name)
			if ok {
				assert.Greater(t, f, last, name)
			}
			last = f
			require.NoError(t, l.Unlock(ctx))
		}
	}
}
