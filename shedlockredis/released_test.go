package shedlockredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

func TestReleasedKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"job-lock:default:job":      "{job-lock:default:job}:released",
		"job-lock:default:a{b":      "{job-lock:default:a{b}:released",
		"job-lock:default:a{tag}b":  "{tag}:released:job-lock:default:a{tag}b",
		"job-lock:default:a{}b":     "",
		"job-lock:default:a}b{":     "",
		"job-lock:default:a}b{tag}": "{tag}:released:job-lock:default:a}b{tag}",
	} {
		assert.Equal(t, want, shedlockredis.ReleasedKey(key), "ReleasedKey(%q)", key)
	}
}

// Unlock records the value it released in the released key for a minute,
// whether it deleted the lock's key or kept it for LockAtLeastFor; a name that
// can have no released key releases all the same.
func TestReleaseRecordsItsValue(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx := context.Background()
	for _, name := range []string{"plain", "a{tag}b", "a{b", "a}b"} {
		for _, least := range []time.Duration{0, time.Minute} {
			key := p.Key(name)
			l, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute, LockAtLeastFor: least})
			require.NoError(t, err)
			value := c.Get(ctx, key).Val()
			require.NoError(t, l.Unlock(ctx), name)
			rk := shedlockredis.ReleasedKey(key)
			if rk == "" {
				continue
			}
			assert.Equal(t, value, c.Get(ctx, rk).Val(), "%s: the released key", name)
			pttl := c.PTTL(ctx, rk).Val()
			assert.Greater(t, pttl, 50*time.Second, "%s: the released key's time to live", name)
			assert.LessOrEqual(t, pttl, time.Minute, "%s: the released key's time to live", name)
			c.Del(ctx, key, rk, shedlockredis.FenceKey(key))
		}
	}
}
