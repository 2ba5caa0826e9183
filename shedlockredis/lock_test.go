package shedlockredis_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// valueForm is Java's value, ADDED:<ISO-8601 time>@<lockedBy>:<unique part>.
var valueForm = regexp.MustCompile(`^ADDED:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z@pod-a:[0-9a-f]{12}-[0-9a-z]+$`)

func TestCommandsAndRoundTrips(t *testing.T) {
	t.Parallel()
	c, log := logged(t, serverAddr(t))
	p := newProvider(t, c, shedlockredis.WithLockedBy("pod-a"))
	name := uniqueName(t, c)
	key := "job-lock:default:" + name
	require.Equal(t, key, p.Key(name))
	ctx := context.Background()
	require.NoError(t, c.Ping(ctx).Err()) // the connection's own handshake, before counting
	log.take()

	// Durations are sent in whole milliseconds, rounded up.
	cfg := shedlock.LockConfig{Name: name, LockAtMostFor: 90*time.Second + 500*time.Microsecond, LockAtLeastFor: 1500 * time.Microsecond}
	for cycle := range 3 {
		l, err := p.TryLock(ctx, cfg)
		require.NoError(t, err)
		sent := log.take()
		if cycle == 0 {
			// First use: the provider reads whether the server may evict keys.
			require.NotEmpty(t, sent)
			assert.Equal(t, []any{"config", "get", "maxmemory*"}, sent[0])
			sent = sent[1:]
		}
		if cycle == 0 && len(sent) == 2 {
			// The server had not seen the script: EVALSHA, NOSCRIPT, then EVAL.
			assert.Equal(t, "evalsha", sent[0][0])
			sent = sent[1:]
		}
		require.Len(t, sent, 1, "one round trip per acquire: %v", sent)
		// The script's SET NX PX, with the fence key and the paused key in
		// the lock key's slot.
		set := sent[0]
		require.Len(t, set, 8)
		assert.Contains(t, []any{"evalsha", "eval"}, set[0])
		if cycle > 0 {
			assert.Equal(t, "evalsha", set[0], "the script is loaded: EVALSHA alone")
		}
		assert.Equal(t, []any{3, key, "{" + key + "}:fence", "{" + key + "}:paused"}, set[2:6])
		assert.Equal(t, int64(90001), set[7])
		value, _ := set[6].(string)
		assert.Regexp(t, valueForm, value)
		assert.Equal(t, value, c.Get(ctx, key).Val(), "the key holds the value sent")
		log.take() // the GET above

		require.NoError(t, l.Unlock(ctx))
		sent = log.take()
		if cycle == 0 && len(sent) == 2 {
			// The server had not seen the script: EVALSHA, NOSCRIPT, then EVAL.
			assert.Equal(t, "evalsha", sent[0][0])
			sent = sent[1:]
		}
		require.Len(t, sent, 1, "one round trip per release: %v", sent)
		rel := sent[0]
		require.Len(t, rel, 8)
		assert.Contains(t, []any{"evalsha", "eval"}, rel[0])
		if cycle > 0 {
			assert.Equal(t, "evalsha", rel[0], "the script is loaded: EVALSHA alone")
		}
		assert.Equal(t, []any{2, key, "{" + key + "}:released", value, int64(2), int64(90001)}, rel[2:],
			"the key and its released key, the value, LockAtLeastFor (1.5ms, rounded up) and the time to live set")
		time.Sleep(3 * time.Millisecond) // let the 2ms LockAtLeastFor pass before the next cycle
	}
}

func TestValueUniquePerAcquisition(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	env := newEnv(t)
	// Two providers with one owner: their values still differ.
	a := newProvider(t, c, shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-a"))
	b := newProvider(t, c, shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod-a"))
	ctx := context.Background()
	seen := map[string]bool{}
	for range 5 {
		for _, p := range []*shedlockredis.Provider{a, b} {
			l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
			require.NoError(t, err)
			v := c.Get(ctx, p.Key("job")).Val()
			require.False(t, seen[v], "value %q given twice", v)
			seen[v] = true
			require.NoError(t, l.Unlock(ctx))
		}
	}
}

// timed runs f and returns the client's time before and after it: the
// server ran f's command between the two.
func timed(f func()) (before, after time.Time) {
	before = time.Now()
	f()
	return before, time.Now()
}

// TestLockAtLeastForByServerClock shows Unlock keeping the key for what is left
// of LockAtLeastFor, counted by the server from the SET, across an Extend, with
// a client clock an hour wrong.
func TestLockAtLeastForByServerClock(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	env := newEnv(t)
	a := newProvider(t, c, shedlockredis.WithEnv(env))
	b := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	skew := -time.Hour
	shedlockredis.SetValueClock(a, func() time.Time { return time.Now().Add(skew) })
	ctx := context.Background()
	const least = 1500 * time.Millisecond
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 3 * time.Second, LockAtLeastFor: least}

	var l shedlock.Lock
	t0, t1 := timed(func() {
		var err error
		l, err = a.TryLock(ctx, cfg)
		require.NoError(t, err)
	})
	value := c.Get(ctx, a.Key("job")).Val()
	require.Contains(t, value, t0.Add(skew).UTC().Format("ADDED:2006-01-02T15"), "the value carries the skewed client time")

	time.Sleep(300 * time.Millisecond) // time passes under the lock: the subject of the test
	// A new, longer LockAtMostFor: the key's time to live restarts, LockAtLeastFor does not.
	require.NoError(t, l.Extend(ctx, 5*time.Second, least))
	time.Sleep(300 * time.Millisecond)
	u0, _ := timed(func() { require.NoError(t, l.Unlock(ctx)) })
	pttl := c.PTTL(ctx, a.Key("job")).Val()
	p1 := time.Now()

	// The server released at some instant between u0 and p1, and took the lock
	// between t0 and t1, so what it kept lies between these bounds (1ms for
	// the server's rounding).
	most := least - u0.Sub(t1) + time.Millisecond
	fewest := least - p1.Sub(t0) - time.Millisecond
	t.Logf("kept %v after Unlock, bounds [%v, %v]", pttl, fewest, most)
	assert.LessOrEqual(t, pttl, most, "kept longer than LockAtLeastFor from the SET: the time before the Extend was not counted")
	assert.GreaterOrEqual(t, pttl, fewest, "kept shorter than what is left of LockAtLeastFor")
	assert.Equal(t, value+shedlockredis.ReleasedMark, c.Get(ctx, a.Key("job")).Val(),
		"the key keeps its value, marked released, while LockAtLeastFor lasts")

	_, err := b.TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "another pod must wait for LockAtLeastFor")
	waitFor(t, "the key to expire", 10*time.Second, func(ctx context.Context) (bool, error) {
		n, err := c.Exists(ctx, a.Key("job")).Result()
		return n == 0, err
	})
	l2, err := b.TryLock(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, l2.Unlock(ctx))
}

func TestLockAtMostForIsKeyTTL(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	shedlockredis.SetValueClock(p, func() time.Time { return time.Now().Add(24 * time.Hour) })
	ctx := context.Background()
	_, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Second})
	require.NoError(t, err)
	pttl := c.PTTL(ctx, p.Key("job")).Val()
	assert.Greater(t, pttl, 9*time.Second)
	assert.LessOrEqual(t, pttl, 10*time.Second, "the time to live is LockAtMostFor, whatever the client clock says")
}

func TestOldHandleCannotTouchNewerAcquisition(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx := context.Background()
	key := p.Key("job")
	// Two acquisitions that expire, then a third by the same provider: a newer
	// acquisition, same owner.
	var old [2]shedlock.Lock
	for i := range old {
		var err error
		old[i], err = p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: 100 * time.Millisecond})
		require.NoError(t, err)
		waitFor(t, "the lock to expire", 10*time.Second, func(ctx context.Context) (bool, error) {
			n, err := c.Exists(ctx, key).Result()
			return n == 0, err
		})
	}
	newer, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	value := c.Get(ctx, key).Val()
	untouched := func(what string) {
		t.Helper()
		assert.Equal(t, value, c.Get(ctx, key).Val(), "%s changed the newer acquisition's value", what)
		pttl := c.PTTL(ctx, key).Val()
		assert.Greater(t, pttl, 50*time.Second, "%s shortened the newer acquisition", what)
		assert.LessOrEqual(t, pttl, time.Minute, "%s extended the newer acquisition", what)
	}

	require.ErrorIs(t, old[0].Unlock(ctx), shedlock.ErrLockLost)
	untouched("an old handle's Unlock")
	require.ErrorIs(t, old[1].Extend(ctx, 10*time.Minute, 0), shedlock.ErrLockLost)
	untouched("an old handle's Extend")
	require.NoError(t, newer.Unlock(ctx))
}

// TestUnlockedHandleIsDone shows a handle whose Unlock kept the key for
// LockAtLeastFor: the key still holds its value, yet the handle can neither
// extend nor release it again.
func TestUnlockedHandleIsDone(t *testing.T) {
	t.Parallel()
	c, log := logged(t, serverAddr(t))
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx := context.Background()
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute})
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	log.take()
	require.ErrorIs(t, l.Extend(ctx, 10*time.Minute, 0), shedlock.ErrLockLost)
	require.ErrorIs(t, l.Unlock(ctx), shedlock.ErrLockLost)
	assert.Empty(t, log.take(), "a finished handle sends nothing")
	assert.LessOrEqual(t, c.PTTL(ctx, p.Key("job")).Val(), time.Minute)
	assert.Equal(t, int64(1), c.Exists(ctx, p.Key("job")).Val(), "LockAtLeastFor still holds")
}

// TestExtendSetsTTL: Extend sets the key's time to live to the new
// LockAtMostFor, and its LockAtLeastFor is what Unlock keeps.
func TestExtendSetsTTL(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx := context.Background()
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second})
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, time.Hour, time.Minute))
	pttl := c.PTTL(ctx, p.Key("job")).Val()
	assert.Greater(t, pttl, 59*time.Minute)
	assert.LessOrEqual(t, pttl, time.Hour)
	require.NoError(t, l.Unlock(ctx))
	pttl = c.PTTL(ctx, p.Key("job")).Val()
	assert.Greater(t, pttl, 59*time.Second, "Unlock keeps the Extend's LockAtLeastFor")
	assert.LessOrEqual(t, pttl, time.Minute)
}
