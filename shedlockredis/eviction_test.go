package shedlockredis_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// evictingPolicies are the maxmemory-policy values under which Redis deletes keys
// when memory is full; every lock key has a time to live, so volatile-* policies
// take them as readily as allkeys-* ones.
var evictingPolicies = []string{
	"allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
}

// evictingServer starts a private redis-server with a 2 MB maxmemory and policy.
func evictingServer(t *testing.T, policy string, args ...string) *redis.Client {
	t.Helper()
	srv := startServerFor(t, "", append([]string{"--maxmemory", "2mb", "--maxmemory-policy", policy}, args...)...)
	c := redis.NewClient(&redis.Options{Addr: srv.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fillUntilGone writes 64 KB values and reads each a few times, as a cache on
// the same Redis would (so that allkeys-lfu finds them used more than a lock),
// until key is gone or 200 values (four times maxmemory) are written. It
// returns how many it wrote. It looks for key with SCAN, which leaves the key's
// LRU and LFU counts alone, as a lock nobody reads between extensions has them.
func fillUntilGone(t *testing.T, c *redis.Client, key string) int {
	t.Helper()
	ctx := context.Background()
	value := strings.Repeat("x", 64<<10)
	for i := 1; i <= 200; i++ {
		// A write refused for want of memory (noeviction) is what keeps the lock.
		filler := "filler:" + strconv.Itoa(i)
		_ = c.Set(ctx, filler, value, 0).Err()
		for range 3 {
			_ = c.Do(ctx, "strlen", filler).Err()
		}
		if !present(t, c, key) {
			return i
		}
	}
	return 0
}

// present reports whether key exists, without touching it.
func present(t *testing.T, c *redis.Client, key string) bool {
	t.Helper()
	keys, _, err := c.Scan(context.Background(), 0, key, 10000).Result()
	require.NoError(t, err)
	return len(keys) > 0
}

// TestEvictionTakesHeldLock measures the risk WithEvictionAllowed accepts: under
// memory pressure an evicting Redis deletes a held lock's key, and another pod
// takes the lock while the first still runs its job, for every evicting policy.
func TestEvictionTakesHeldLock(t *testing.T) {
	t.Parallel()
	for _, policy := range evictingPolicies {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			c := evictingServer(t, policy)
			a := newProvider(t, c, shedlockredis.WithEvictionAllowed())
			b := newProvider(t, c, shedlockredis.WithEvictionAllowed())
			ctx := context.Background()
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Hour}
			held, err := a.TryLock(ctx, cfg)
			require.NoError(t, err)
			_, err = b.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired, "held: the other pod must wait")

			n := fillUntilGone(t, c, a.Key("job"))
			require.NotZero(t, n, "the lock key was never evicted")
			t.Logf("%s: lock key evicted after %d writes of 64 KB", policy, n)
			_, err = b.TryLock(ctx, cfg)
			require.NoError(t, err, "the other pod takes the lock the first still holds")
			assert.ErrorIs(t, held.Extend(ctx, time.Hour, 0), shedlock.ErrLockLost,
				"the first pod learns only when it next extends")
		})
	}
}

// TestEvictingServerRefused: with maxmemory set and an evicting policy, the
// first TryLock is refused with ErrUnsafeStore naming the setting and its
// remedy, and no lock is taken.
func TestEvictingServerRefused(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "noeviction")
	ctx := context.Background()
	for _, policy := range evictingPolicies {
		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", policy).Err())
		p := newProvider(t, c)
		l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		assert.Nil(t, l, policy)
		assert.ErrorIs(t, err, shedlock.ErrUnsafeStore, policy)
		assert.ErrorContains(t, err, "maxmemory-policy "+policy, policy)
		assert.ErrorContains(t, err, "noeviction", policy)
		assert.ErrorContains(t, err, "WithEvictionAllowed", policy)
		assert.Zero(t, c.Exists(ctx, p.Key("job")).Val(), "%s: a refused provider wrote its lock", policy)
	}
}

// TestEvictingServerRefusedThroughInfo: where CONFIG is disabled, as managed
// services do, the settings are read from INFO memory, and the server is
// refused all the same.
func TestEvictingServerRefusedThroughInfo(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "allkeys-lru", "--rename-command", "CONFIG", "")
	ctx := context.Background()
	require.ErrorContains(t, c.ConfigGet(ctx, "maxmemory").Err(), "unknown command", "CONFIG must be disabled")
	c2, log := logged(t, c.Options().Addr)
	require.NoError(t, c2.Ping(ctx).Err()) // the connection's own handshake, before counting
	log.take()
	p := newProvider(t, c2)
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	assert.Nil(t, l)
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.ErrorContains(t, err, "maxmemory 2097152 and maxmemory-policy allkeys-lru")
	sent := log.take()
	require.Len(t, sent, 2, "CONFIG GET, then INFO memory: %v", sent)
	assert.Equal(t, []any{"info", "memory"}, sent[1])
	assert.Zero(t, c.Exists(ctx, p.Key("job")).Val())
}

// TestEvictionPoliciesThroughInfo: every policy is read right from INFO, on a
// server whose CONFIG only the test knows the name of.
func TestEvictionPoliciesThroughInfo(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "noeviction", "--rename-command", "CONFIG", "config-known-to-the-test")
	ctx := context.Background()
	set := func(name, value string) {
		require.NoError(t, c.Do(ctx, "config-known-to-the-test", "set", name, value).Err())
	}
	for _, policy := range evictingPolicies {
		set("maxmemory-policy", policy)
		_, err := newProvider(t, c).TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		assert.ErrorIs(t, err, shedlock.ErrUnsafeStore, policy)
		assert.ErrorContains(t, err, "maxmemory-policy "+policy, policy)
	}
	set("maxmemory-policy", "noeviction")
	l, err := newProvider(t, c).TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err, "noeviction")
	require.NoError(t, l.Unlock(ctx))
	set("maxmemory-policy", "allkeys-lru")
	set("maxmemory", "0")
	l, err = newProvider(t, c).TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err, "maxmemory 0 never evicts, whatever the policy")
	require.NoError(t, l.Unlock(ctx))
}

// TestEvictionCheckWithoutConfigPermission: a user whose ACL forbids CONFIG is
// checked through INFO.
func TestEvictionCheckWithoutConfigPermission(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "volatile-ttl")
	ctx := context.Background()
	require.NoError(t, c.Do(ctx, "acl", "setuser", "app", "on", ">secret", "~*", "+@all", "-config").Err())
	app := redis.NewClient(&redis.Options{Addr: c.Options().Addr, Username: "app", Password: "secret"})
	t.Cleanup(func() { _ = app.Close() })
	require.ErrorContains(t, app.ConfigGet(ctx, "maxmemory").Err(), "NOPERM")
	_, err := newProvider(t, app).TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.ErrorContains(t, err, "maxmemory-policy volatile-ttl")
}

// TestEvictionSettingsUnreadable: a server that answers neither CONFIG nor INFO
// is refused, with the way to accept it.
func TestEvictionSettingsUnreadable(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "noeviction", "--rename-command", "CONFIG", "", "--rename-command", "INFO", "")
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	_, err := newProvider(t, c).TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.ErrorContains(t, err, "cannot read maxmemory-policy")
	assert.ErrorContains(t, err, "WithEvictionAllowed")
	l, err := newProvider(t, c, shedlockredis.WithEvictionAllowed()).TryLock(ctx, cfg)
	require.NoError(t, err, "accepted when the user says so")
	require.NoError(t, l.Unlock(ctx))
}

// TestEvictionAllowed: the opt-in takes locks on an evicting server and sends
// no check.
func TestEvictionAllowed(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "allkeys-lru")
	logc, log := logged(t, c.Options().Addr)
	p := newProvider(t, logc, shedlockredis.WithEvictionAllowed())
	ctx := context.Background()
	require.NoError(t, logc.Ping(ctx).Err())
	log.take()
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, []string{"evalsha"}, acquireNames(log.take()), "the acquire script alone")
	require.NoError(t, l.Unlock(ctx))
}

// TestSafeServerCheckedOnce: a server found safe is not asked again; a refused
// one is asked at every TryLock, so a policy fixed by the operator is seen.
func TestSafeServerCheckedOnce(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "allkeys-lru")
	logc, log := logged(t, c.Options().Addr)
	p := newProvider(t, logc)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	for range 2 {
		_, err := p.TryLock(ctx, cfg)
		require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	}
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	log.take()
	l, err := p.TryLock(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, []string{"config", "evalsha"}, acquireNames(log.take()), "the check, then the acquire script")
	require.NoError(t, l.Unlock(ctx))
	for range 3 {
		log.take()
		l, err := p.TryLock(ctx, cfg)
		require.NoError(t, err)
		require.Equal(t, []string{"evalsha"}, acquireNames(log.take()), "no check once the server was found safe")
		require.NoError(t, l.Unlock(ctx))
	}
}

// acquireNames is names without the EVAL that follows an EVALSHA the server
// answered NOSCRIPT: a new server has not seen the acquire script yet.
func acquireNames(sent [][]any) []string {
	out := names(sent)
	if n := len(out); n >= 2 && out[n-1] == "eval" && out[n-2] == "evalsha" {
		out = out[:n-1]
	}
	return out
}

// names returns the name of each command sent.
func names(sent [][]any) []string {
	var out []string
	for _, cmd := range sent {
		out = append(out, strings.ToLower(cmd[0].(string)))
	}
	return out
}

// TestNoEvictionKeepsLock: under noeviction a full server refuses writes
// instead, and the held lock stays; the control for TestEvictionTakesHeldLock.
func TestNoEvictionKeepsLock(t *testing.T) {
	t.Parallel()
	c := evictingServer(t, "noeviction")
	p := newProvider(t, c)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Hour}
	held, err := p.TryLock(ctx, cfg)
	require.NoError(t, err)
	assert.Zero(t, fillUntilGone(t, c, p.Key("job")), "noeviction deleted the lock")
	err = c.Set(ctx, "one-more", strings.Repeat("x", 64<<10), 0).Err()
	require.ErrorContains(t, err, "OOM", "the server is full")
	_, err = newProvider(t, c).TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	require.NoError(t, held.Extend(ctx, time.Hour, 0))
	require.NoError(t, held.Unlock(ctx))
}

// TestEvictingClusterRefused: every primary of a Cluster is checked.
func TestEvictingClusterRefused(t *testing.T) {
	t.Parallel()
	node := startServerFor(t, "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lfu")
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
	_, err := newProvider(t, c).TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	_, port, _ := net.SplitHostPort(node.addr)
	assert.ErrorContains(t, err, ":"+port+" has maxmemory 2097152 and maxmemory-policy allkeys-lfu")
}
