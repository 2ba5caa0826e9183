package shedlockredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock/shedlockredis"
)

// The executor sizes its statements in flight to the client's pool.
func TestPoolSize(t *testing.T) {
	for _, tc := range []struct {
		opts redis.Options
		want int
	}{
		{redis.Options{PoolSize: 6}, 6},
		{redis.Options{PoolSize: 6, MaxActiveConns: 4}, 4},
		{redis.Options{PoolSize: 6, MaxActiveConns: 9}, 6},
	} {
		c := redis.NewClient(&tc.opts)
		p, err := shedlockredis.NewProvider(c)
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.PoolSize())
		require.NoError(t, c.Close())
	}
}
