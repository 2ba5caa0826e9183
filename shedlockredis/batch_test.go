package shedlockredis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// minute is a config of name held for a minute.
func minute(name string) shedlock.LockConfig {
	return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
}

// mustBatch runs a batch that must succeed as a whole.
func mustBatch(t *testing.T, p *shedlockredis.Provider, cfgs ...shedlock.LockConfig) []shedlock.LockResult {
	t.Helper()
	res, err := p.TryLockBatch(context.Background(), cfgs)
	require.NoError(t, err)
	require.Len(t, res, len(cfgs))
	return res
}

// TestBatchTakesFreeNames: a batch on fresh names takes them all, each with a
// value of its own in its key; a second provider's batch over them and more
// takes exactly the free ones, in the order of its configs, and a bad config
// is that entry's error alone.
func TestBatchTakesFreeNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	env := newEnv(t)
	a := newProvider(t, c, shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-a"))
	b := newProvider(t, newClient(t), shedlockredis.WithEnv(env))

	first := mustBatch(t, a, minute("c"), minute("a"), minute("b"))
	values := map[string]bool{}
	for i, name := range []string{"c", "a", "b"} {
		require.NoError(t, first[i].Err, name)
		require.NotNil(t, first[i].Lock, name)
		v := c.Get(ctx, a.Key(name)).Val()
		assert.Regexp(t, valueForm, v, name)
		assert.False(t, values[v], "value %q given twice", v)
		values[v] = true
		_, ok := shedlock.FenceOf(first[i].Lock)
		assert.True(t, ok, "a batch lock carries a token")
		pttl := c.PTTL(ctx, a.Key(name)).Val()
		assert.Greater(t, pttl, 50*time.Second, name)
		assert.LessOrEqual(t, pttl, time.Minute, name)
	}

	bad := shedlock.LockConfig{Name: "bad", LockAtMostFor: time.Minute, LockAtLeastFor: time.Hour}
	second := mustBatch(t, b, minute("d"), minute("b"), bad, minute("e"), minute("a"), shedlock.LockConfig{Name: "", LockAtMostFor: time.Second})
	taken := []bool{true, false, false, true, false, false}
	for i, res := range second {
		if taken[i] {
			assert.NoError(t, res.Err, "entry %d", i)
			assert.NotNil(t, res.Lock, "entry %d", i)
			continue
		}
		assert.Nil(t, res.Lock, "entry %d", i)
	}
	assert.ErrorIs(t, second[1].Err, shedlock.ErrNotAcquired)
	assert.ErrorIs(t, second[4].Err, shedlock.ErrNotAcquired)
	assert.ErrorIs(t, second[2].Err, shedlock.ErrInvalidConfig)
	assert.ErrorContains(t, second[2].Err, "must not exceed LockAtMostFor")
	assert.ErrorIs(t, second[5].Err, shedlock.ErrInvalidConfig)
	assert.Zero(t, c.Exists(ctx, b.Key("bad")).Val(), "a bad config was sent")
	for _, name := range []string{"a", "b"} {
		assert.True(t, values[c.Get(ctx, a.Key(name)).Val()], "a held lock %q changed hands", name)
	}
	for _, res := range append(first, second...) {
		if res.Lock != nil {
			require.NoError(t, res.Lock.Unlock(ctx))
		}
	}
}

// TestBatchFenceIncreases: each name's token is larger than that name's last,
// whichever is larger of its last token + 1 and the clock.
func TestBatchFenceIncreases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	names := []string{"x", "y", "z"}
	last := map[string]int64{}
	for _, name := range names {
		l, f := mustFence(t, p, minute(name))
		last[name] = f
		require.NoError(t, l.Unlock(ctx))
	}
	// y's last token an hour ahead of the clock, as written before the server's
	// clock stepped back: its next must still be larger, x's and z's not near it.
	last["y"] += time.Hour.Microseconds()
	require.NoError(t, c.Set(ctx, shedlockredis.FenceKey(p.Key("y")), last["y"], 0).Err())

	for round := range 3 {
		res := mustBatch(t, p, minute("z"), minute("x"), minute("y"))
		for i, name := range []string{"z", "x", "y"} {
			require.NoError(t, res[i].Err, name)
			f, ok := shedlock.FenceOf(res[i].Lock)
			require.True(t, ok, name)
			assert.Greater(t, f, last[name], "round %d, %q", round, name)
			if name == "y" {
				assert.Equal(t, last[name]+1, f, "y's token is its last + 1")
			} else {
				assert.Less(t, f, last["y"]-time.Minute.Microseconds(), "%q's token took another name's", name)
			}
			stored, err := c.Get(ctx, shedlockredis.FenceKey(p.Key(name))).Int64()
			require.NoError(t, err)
			assert.Equal(t, f, stored, "the token returned is the one written, in decimal digits")
			last[name] = f
			require.NoError(t, res[i].Lock.Unlock(ctx))
		}
	}
}

// TestBatchUnlockAndExtend: a batch lock's Unlock keeps LockAtLeastFor, from
// the config or from an Extend, and an Unlock of one lets no other go.
func TestBatchUnlockAndExtend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	env := newEnv(t)
	p := newProvider(t, c, shedlockredis.WithEnv(env))
	other := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	res := mustBatch(t, p,
		shedlock.LockConfig{Name: "least", LockAtMostFor: time.Hour, LockAtLeastFor: time.Minute},
		shedlock.LockConfig{Name: "extended", LockAtMostFor: 2 * time.Second},
		shedlock.LockConfig{Name: "free", LockAtMostFor: time.Hour})
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	inRange := func(name string, low, high time.Duration) {
		t.Helper()
		pttl := c.PTTL(ctx, p.Key(name)).Val()
		assert.Greater(t, pttl, low, name)
		assert.LessOrEqual(t, pttl, high, name)
	}

	require.NoError(t, res[0].Lock.Unlock(ctx))
	inRange("least", 50*time.Second, time.Minute)
	_, err := other.TryLock(ctx, minute("least"))
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Unlock let go before LockAtLeastFor")

	require.NoError(t, res[1].Lock.Extend(ctx, time.Hour, 2*time.Minute))
	inRange("extended", 59*time.Minute, time.Hour)
	require.NoError(t, res[1].Lock.Unlock(ctx))
	inRange("extended", 110*time.Second, 2*time.Minute)

	inRange("free", 59*time.Minute, time.Hour)
	require.NoError(t, res[2].Lock.Unlock(ctx))
	assert.Zero(t, c.Exists(ctx, p.Key("free")).Val(), "with no LockAtLeastFor, Unlock frees the lock")
	require.ErrorIs(t, res[2].Lock.Unlock(ctx), shedlock.ErrLockLost)
}

// TestBatchDuplicateOrBadSendsNothing uses a client on a closed port: a name
// given twice fails the batch, and a batch of bad configs only, its entries,
// both before any dial.
func TestBatchDuplicateOrBadSendsNothing(t *testing.T) {
	t.Parallel()
	c, log := logged(t, closedAddr(t))
	p, err := shedlockredis.NewProvider(c)
	require.NoError(t, err)
	ctx := context.Background()

	res, err := p.TryLockBatch(ctx, []shedlock.LockConfig{minute("a"), minute("b"), minute("a")})
	assert.Nil(t, res)
	require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
	assert.ErrorContains(t, err, `"a" appears twice`)

	res, err = p.TryLockBatch(ctx, []shedlock.LockConfig{{Name: "a"}, {Name: strings.Repeat("x", 65), LockAtMostFor: time.Minute}})
	require.NoError(t, err)
	require.Len(t, res, 2)
	for _, r := range res {
		assert.ErrorIs(t, r.Err, shedlock.ErrInvalidConfig)
	}
	res, err = p.TryLockBatch(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, res)
	assert.Zero(t, log.dials.Load(), "bad input dialled the server")
	assert.Empty(t, log.take(), "bad input sent a command")

	// A valid config needs the server, which is not there: the batch's error.
	res, err = p.TryLockBatch(ctx, []shedlock.LockConfig{minute("a"), {Name: "b"}})
	assert.Nil(t, res)
	require.Error(t, err)
	assert.NotErrorIs(t, err, shedlock.ErrNotAcquired)
	assert.NotErrorIs(t, err, shedlock.ErrInvalidConfig)
}

// TestBatchJavaKeyExcludes: a key a Java ShedLock pod wrote keeps its name out
// of a batch, which takes the others and leaves Java's value as it was.
func TestBatchJavaKeyExcludes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	java := &javaPod{c: newClient(t), host: "java-pod"}
	p := newProvider(t, c)
	held, free := uniqueName(t, c), uniqueName(t, c)
	jl, ok, err := java.lock(ctx, held, time.Minute, 0)
	require.NoError(t, err)
	require.True(t, ok)

	res := mustBatch(t, p, minute(free), minute(held))
	require.NoError(t, res[0].Err)
	require.ErrorIs(t, res[1].Err, shedlock.ErrNotAcquired, "a batch took a lock Java holds")
	assert.Equal(t, jl.value, c.Get(ctx, p.Key(held)).Val())
	n, err := jl.unlock(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "Java's lock was still Java's")
	require.NoError(t, res[0].Lock.Unlock(ctx))
}

// TestBatchOnReplica: a replica refuses the script: the batch's error, never
// ErrNotAcquired.
func TestBatchOnReplica(t *testing.T) {
	t.Parallel()
	primary := startServerFor(t, "")
	host, port, _ := strings.Cut(primary.addr, ":")
	replica := startServerFor(t, "", "--replicaof", host, port)
	c := redis.NewClient(&redis.Options{Addr: replica.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	p := newProvider(t, c)
	res, err := p.TryLockBatch(context.Background(), []shedlock.LockConfig{minute("a"), minute("b")})
	assert.Nil(t, res)
	require.Error(t, err)
	assert.NotErrorIs(t, err, shedlock.ErrNotAcquired)
	assert.ErrorContains(t, err, "READONLY")
}

// TestBatchRefusedOrEnded: the first-use check refuses an evicting server for
// a batch as for TryLock, and an ended context ends the batch: both the
// batch's error, with nothing taken.
func TestBatchRefusedOrEnded(t *testing.T) {
	t.Parallel()
	evicting := newProvider(t, evictingServer(t, "allkeys-lru"))
	res, err := evicting.TryLockBatch(context.Background(), []shedlock.LockConfig{minute("a"), minute("b")})
	assert.Nil(t, res)
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)

	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = p.TryLockBatch(ctx, []shedlock.LockConfig{minute("a"), minute("b")})
	assert.Nil(t, res)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, c.Exists(context.Background(), p.Key("a"), p.Key("b")).Val())
}
