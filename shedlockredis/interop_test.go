package shedlockredis_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// The scripts of Java ShedLock 7's RedisLockProvider (InternalRedisLockProvider,
// with safe updates), copied as Java sends them.
const (
	javaDelScript = `
        if redis.call("get",KEYS[1]) == ARGV[1] then
            return redis.call("del",KEYS[1])
        else
            return 0
        end
        `
	javaUpdScript = `
        if redis.call('get', KEYS[1]) == ARGV[1] then
           return redis.call('pexpire', KEYS[1], ARGV[2])
        else
           return 0
        end
        `
)

// javaPod sends what a Java ShedLock pod sends, with env "default".
type javaPod struct {
	c    redis.UniversalClient
	host string
}

// javaLock is one acquisition by a javaPod.
type javaLock struct {
	pod        *javaPod
	key, value string
	leastUntil time.Time // Java computes lockAtLeastUntil with its own clock
}

// lock is Java's lock(): SET job-lock:default:<name> <value> NX PX <ms>.
func (j *javaPod) lock(ctx context.Context, name string, atMostFor, atLeastFor time.Duration) (*javaLock, bool, error) {
	now := time.Now()
	key := "job-lock:default:" + name
	value := fmt.Sprintf("ADDED:%s@%s:%s", now.UTC().Format(time.RFC3339Nano), j.host, rand.Text())
	err := j.c.Do(ctx, "SET", key, value, "NX", "PX", atMostFor.Milliseconds()).Err()
	if err == redis.Nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &javaLock{pod: j, key: key, value: value, leastUntil: now.Add(atLeastFor)}, true, nil
}

// unlock is Java's doUnlock: delete the key if lockAtLeastUntil has passed, else
// PEXPIRE it to what is left; both only if the value is Java's.
func (l *javaLock) unlock(ctx context.Context) (int64, error) {
	keep := time.Until(l.leastUntil).Milliseconds()
	if keep <= 0 {
		return l.pod.c.Eval(ctx, javaDelScript, []string{l.key}, l.value).Int64()
	}
	return l.pod.c.Eval(ctx, javaUpdScript, []string{l.key}, l.value, fmt.Sprint(keep)).Int64()
}

// extend is Java's extend: PEXPIRE to the new lockAtMostFor if the value is Java's.
func (l *javaLock) extend(ctx context.Context, atMostFor time.Duration) (int64, error) {
	return l.pod.c.Eval(ctx, javaUpdScript, []string{l.key}, l.value, fmt.Sprint(atMostFor.Milliseconds())).Int64()
}

// TestJavaInterop runs a Go pod (default env) and a Java pod on one Redis and
// shows that they exclude each other both ways, and that neither's release or
// extension touches the other's lock.
func TestJavaInterop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	java := &javaPod{c: newClient(t), host: "java-pod"}
	goPod := newProvider(t, c)
	name := uniqueName(t, c)
	cfg := shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	key := "job-lock:default:" + name
	require.Equal(t, key, goPod.Key(name), "Go pods use Java's key by default")

	t.Run("GoHoldsJavaWaits", func(t *testing.T) {
		l, err := goPod.TryLock(ctx, cfg)
		require.NoError(t, err)
		_, ok, err := java.lock(ctx, name, time.Minute, 0)
		require.NoError(t, err)
		require.False(t, ok, "Java took a lock a Go pod holds")
		require.NoError(t, l.Unlock(ctx))
		jl, ok, err := java.lock(ctx, name, time.Minute, 0)
		require.NoError(t, err)
		require.True(t, ok, "Java could not take a lock a Go pod released")
		n, err := jl.unlock(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	})

	t.Run("JavaHoldsGoWaits", func(t *testing.T) {
		jl, ok, err := java.lock(ctx, name, time.Minute, 0)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = goPod.TryLock(ctx, cfg)
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "a Go pod took a lock Java holds")
		n, err := jl.unlock(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		l, err := goPod.TryLock(ctx, cfg)
		require.NoError(t, err, "a Go pod could not take a lock Java released")
		require.NoError(t, l.Unlock(ctx))
	})

	t.Run("JavaLockAtLeastForHoldsGo", func(t *testing.T) {
		jl, ok, err := java.lock(ctx, name, time.Minute, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = jl.unlock(ctx) // PEXPIRE to what is left of a minute
		require.NoError(t, err)
		_, err = goPod.TryLock(ctx, cfg)
		require.ErrorIs(t, err, shedlock.ErrNotAcquired)
		require.NoError(t, c.Del(ctx, key).Err())
	})

	t.Run("GoLockAtLeastForHoldsJava", func(t *testing.T) {
		l, err := goPod.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute})
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
		_, ok, err := java.lock(ctx, name, time.Minute, 0)
		require.NoError(t, err)
		require.False(t, ok, "Java took a lock a Go pod keeps for LockAtLeastFor")
		require.NoError(t, c.Del(ctx, key).Err())
	})

	t.Run("ExpiredJavaLockCannotTouchGoLock", func(t *testing.T) {
		jl, ok, err := java.lock(ctx, name, 100*time.Millisecond, 0)
		require.NoError(t, err)
		require.True(t, ok)
		var l shedlock.Lock
		waitFor(t, "the Java lock to expire and a Go pod to take it", 10*time.Second, func(ctx context.Context) (bool, error) {
			l, err = goPod.TryLock(ctx, cfg)
			if errors.Is(err, shedlock.ErrNotAcquired) {
				return false, nil
			}
			return err == nil, err
		})
		value := c.Get(ctx, key).Val()
		n, err := jl.extend(ctx, time.Hour)
		require.NoError(t, err)
		assert.Equal(t, int64(0), n, "Java's extend touched a Go pod's lock")
		n, err = jl.unlock(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(0), n, "Java's unlock touched a Go pod's lock")
		assert.Equal(t, value, c.Get(ctx, key).Val())
		assert.LessOrEqual(t, c.PTTL(ctx, key).Val(), time.Minute)
		require.NoError(t, l.Unlock(ctx))
	})

	// A Go handle whose lock expired and went to Java: its Unlock, and (from
	// a second such handle) its Extend, leave Java's lock as it is.
	for _, late := range []struct {
		name string
		call func(shedlock.Lock) error
	}{
		{"ExpiredGoLockCannotReleaseJavaLock", func(l shedlock.Lock) error { return l.Unlock(ctx) }},
		{"ExpiredGoLockCannotExtendJavaLock", func(l shedlock.Lock) error { return l.Extend(ctx, time.Hour, 0) }},
	} {
		t.Run(late.name, func(t *testing.T) {
			l, err := goPod.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: 100 * time.Millisecond})
			require.NoError(t, err)
			var jl *javaLock
			waitFor(t, "the Go lock to expire and Java to take it", 10*time.Second, func(ctx context.Context) (bool, error) {
				var ok bool
				jl, ok, err = java.lock(ctx, name, time.Minute, 0)
				return ok, err
			})
			require.ErrorIs(t, late.call(l), shedlock.ErrLockLost)
			assert.Equal(t, jl.value, c.Get(ctx, key).Val(), "a Go pod's late call touched Java's lock")
			pttl := c.PTTL(ctx, key).Val()
			assert.Greater(t, pttl, 50*time.Second)
			assert.LessOrEqual(t, pttl, time.Minute)
			n, err := jl.unlock(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
		})
	}
}

// TestJavaEnv: WithEnv gives Java's key for that env.
func TestJavaEnv(t *testing.T) {
	t.Parallel()
	p := newProvider(t, newClient(t), shedlockredis.WithEnv("prod"))
	assert.Equal(t, "job-lock:prod:orders", p.Key("orders"))
}
