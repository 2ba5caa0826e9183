package shedlockredis_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// closedAddr returns an address on which nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	c, log := logged(t, closedAddr(t))
	cases := []struct {
		name   string
		client redis.UniversalClient
		opts   []shedlockredis.Option
		want   string
	}{
		{"nil client", nil, nil, "nil client"},
		{"nil *redis.Client", (*redis.Client)(nil), nil, "nil client"},
		{"nil *redis.ClusterClient", (*redis.ClusterClient)(nil), nil, "nil client"},
		{"empty env", c, []shedlockredis.Option{shedlockredis.WithEnv("")}, `shedlockredis.WithEnv("")`},
		{"env with colon", c, []shedlockredis.Option{shedlockredis.WithEnv("a:b")}, `WithEnv("a:b")`},
		{"nil option", c, []shedlockredis.Option{nil}, "shedlockredis.NewProvider: option 0 is nil"},
		{"nil second option", c, []shedlockredis.Option{shedlockredis.WithEnv("a"), nil}, "option 1 is nil"},
	}
	for _, tc := range cases {
		p, err := shedlockredis.NewProvider(tc.client, tc.opts...)
		assert.Nil(t, p, tc.name)
		assert.ErrorIs(t, err, shedlock.ErrInvalidOption, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	// An empty owner means the host name, as in the SQL providers.
	p, err := shedlockredis.NewProvider(c, shedlockredis.WithLockedBy(""))
	require.NoError(t, err)
	host, _ := os.Hostname()
	assert.Equal(t, host, p.LockedBy())
	assert.Zero(t, log.dials.Load(), "a constructor dialled")
	assert.Empty(t, log.take(), "a constructor sent a command")
}

// TestBadConfigSendsNothing uses a client on a closed port: any command would
// fail to dial, so errors that are ErrInvalidConfig and no dial show that the
// input was refused before Redis was needed.
func TestBadConfigSendsNothing(t *testing.T) {
	t.Parallel()
	c, log := logged(t, closedAddr(t))
	p, err := shedlockredis.NewProvider(c)
	require.NoError(t, err, "NewProvider must not need the server")
	cfg := func(name string, most, least time.Duration) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: most, LockAtLeastFor: least}
	}
	cases := []struct {
		cfg  shedlock.LockConfig
		want string
	}{
		{cfg("", time.Minute, 0), "Name is empty"},
		{cfg(strings.Repeat("x", 65), time.Minute, 0), "65 characters"},
		{cfg("bad\xff", time.Minute, 0), "not valid UTF-8"},
		{cfg("job", 0, 0), "LockAtMostFor must be at least 1ms"},
		{cfg("job", 999*time.Microsecond, 0), "LockAtMostFor must be at least 1ms"},
		{cfg("job", -time.Second, 0), "LockAtMostFor must be at least 1ms"},
		{cfg("job", time.Minute, -time.Second), "LockAtLeastFor must be >= 0"},
		{cfg("job", time.Minute, 500*time.Microsecond), "LockAtLeastFor must be 0 or at least 1ms"},
		{cfg("job", time.Minute, 2*time.Minute), "must not exceed LockAtMostFor"},
	}
	for _, tc := range cases {
		l, err := p.TryLock(context.Background(), tc.cfg)
		assert.Nil(t, l)
		assert.ErrorIs(t, err, shedlock.ErrInvalidConfig, "%+v", tc.cfg)
		assert.ErrorContains(t, err, tc.want)
		err = p.CheckConfig(tc.cfg)
		assert.ErrorIs(t, err, shedlock.ErrInvalidConfig, "CheckConfig(%+v)", tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
	assert.NoError(t, p.CheckConfig(cfg("job", time.Millisecond, time.Millisecond)))
	assert.NoError(t, p.CheckConfig(cfg(strings.Repeat("é", 64), time.Minute, 0)))
	assert.Zero(t, log.dials.Load(), "bad input dialled the server")
	assert.Empty(t, log.take(), "bad input sent a command")

	// A valid config does need the server: here, one that is not there.
	l, err := p.TryLock(context.Background(), cfg("job", time.Minute, 0))
	assert.Nil(t, l)
	require.Error(t, err)
	assert.NotErrorIs(t, err, shedlock.ErrNotAcquired, "an unreachable server is an error, not a held lock")
	assert.NotErrorIs(t, err, shedlock.ErrInvalidConfig)
	assert.Positive(t, log.dials.Load(), "the hook sees dials")
}

func TestBadExtendSendsNothing(t *testing.T) {
	t.Parallel()
	c, log := logged(t, serverAddr(t))
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx := context.Background()
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	log.take()
	for _, d := range [][2]time.Duration{{0, 0}, {999 * time.Microsecond, 0}, {time.Second, 2 * time.Second}, {time.Second, -1}} {
		assert.ErrorIs(t, l.Extend(ctx, d[0], d[1]), shedlock.ErrInvalidConfig, "Extend(%v, %v)", d[0], d[1])
	}
	assert.Empty(t, log.take(), "a bad Extend sent a command")
	pttl := c.PTTL(ctx, p.Key("job")).Val()
	assert.Greater(t, pttl, 50*time.Second, "a bad Extend changed the lock")
	require.NoError(t, l.Unlock(ctx))
}
