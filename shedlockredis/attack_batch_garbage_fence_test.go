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
// batch, and leaves no other member's key set with nobody told.
func TestAttackBatchGarbageFenceKeyFailsTheWholeBatch(t *testing.T) {
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
	}
}
