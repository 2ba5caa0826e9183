package shedlockredis_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// One member's problem is its own (BatchLocker): a fence key written by hand
// with garbage (not a number, or not a string) fails that member, not the
// batch, and leaves no key of it set; TryLock fails on it the same way.
func TestBatchGarbageFenceKeyFailsItsMemberAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	env := newEnv(t)
	p := newProvider(t, c, shedlockredis.WithEnv(env))
	for _, garbage := range []string{"string", "list"} {
		bad := "m-bad-" + garbage
		fence := shedlockredis.FenceKey(p.Key(bad))
		require.NotEmpty(t, fence)
		if garbage == "string" {
			require.NoError(t, c.Set(ctx, fence, "garbage", 0).Err())
		} else {
			require.NoError(t, c.RPush(ctx, fence, "garbage").Err())
		}
		a, z := "a-"+garbage, "z-"+garbage
		res, err := p.TryLockBatch(ctx, []shedlock.LockConfig{minute(a), minute(bad), minute(z)})
		if err != nil {
			n, _ := c.Exists(ctx, p.Key(a), p.Key(bad), p.Key(z)).Result()
			t.Errorf("%s fence key: the batch failed whole (%v); lock keys it left set, with nobody told: %d", garbage, err, n)
			continue
		}
		assert.NoError(t, res[0].Err, a)
		assert.NoError(t, res[2].Err, z)
		require.Error(t, res[1].Err, bad)
		assert.NotErrorIs(t, res[1].Err, shedlock.ErrNotAcquired, "the key is free: the garbage is the error")
		assert.Contains(t, res[1].Err.Error(), fence)
		assert.Zero(t, c.Exists(ctx, p.Key(bad)).Val(), "%s: no lock is left held with nobody told", bad)

		_, err = p.TryLock(ctx, minute(bad))
		require.Error(t, err, "TryLock on %s", bad)
		assert.NotErrorIs(t, err, shedlock.ErrNotAcquired)
		assert.Zero(t, c.Exists(ctx, p.Key(bad)).Val(), "TryLock left %s set", bad)
		for _, r := range []shedlock.LockResult{res[0], res[2]} {
			require.NoError(t, r.Lock.Unlock(ctx))
		}
	}
}
