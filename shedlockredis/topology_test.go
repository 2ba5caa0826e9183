package shedlockredis_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// TestCluster runs the behaviour suite through Cluster clients, on a
// one-node cluster that owns every slot.
func TestCluster(t *testing.T) {
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
	newClusterClient := func(t *testing.T) redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{node.addr}, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		env := newEnv(t)
		return func(t *testing.T) shedlock.LockProvider {
			return newProvider(t, newClusterClient(t), shedlockredis.WithEnv(env))
		}
	})
}

// TestSentinel runs the behaviour suite through Sentinel (failover) clients,
// which find the primary by asking a sentinel.
func TestSentinel(t *testing.T) {
	t.Parallel()
	primary := startServerFor(t, "")
	host, port, _ := net.SplitHostPort(primary.addr)
	sentinel := startServerFor(t, fmt.Sprintf("sentinel monitor shedlock %s %s 1\n", host, port), "--sentinel")
	newFailoverClient := func(t *testing.T) redis.UniversalClient {
		c := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: "shedlock", SentinelAddrs: []string{sentinel.addr}, ContextTimeoutEnabled: true,
		})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	probe := newFailoverClient(t)
	waitFor(t, "the sentinel to name the primary", 30*time.Second, func(ctx context.Context) (bool, error) {
		return probe.Ping(ctx).Err() == nil, nil
	})
	shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		env := "sentinel-" + strings.ReplaceAll(t.Name(), "/", "-")
		return func(t *testing.T) shedlock.LockProvider {
			return newProvider(t, newFailoverClient(t), shedlockredis.WithEnv(env))
		}
	})
}
