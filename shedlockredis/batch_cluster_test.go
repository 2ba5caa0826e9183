package shedlockredis_test

import (
	"context"
	"fmt"
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

// TestSlot: the slot function against the examples of the Cluster
// specification; TestBatchCluster compares it with a server's.
func TestSlot(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 12739, shedlockredis.Slot("123456789"), "CRC16 XMODEM check value 0x31C3")
	assert.Equal(t, shedlockredis.Slot("user1000"), shedlockredis.Slot("{user1000}.following"))
	assert.Equal(t, shedlockredis.Slot("bar"), shedlockredis.Slot("foo{bar}{zap}"))
	assert.Equal(t, shedlockredis.Slot("{bar"), shedlockredis.Slot("foo{{bar}}zap"))
	assert.NotEqual(t, shedlockredis.Slot("bar"), shedlockredis.Slot("foo{}{bar}"), "an empty tag is no tag")
}

// startCluster starts a Cluster of n primaries on loopback, each with an
// equal share of the slots, and returns their addresses once every node
// finds the cluster ok.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	addrs := make([]string, n)
	admins := make([]*redis.Client, n)
	buses := make([]int, n)
	for i := range n {
		bus, err := freePort() // the default, port + 10000, may be past 65535
		require.NoError(t, err)
		buses[i] = bus
		srv := startServerFor(t, "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus))
		addrs[i] = srv.addr
		admins[i] = redis.NewClient(&redis.Options{Addr: srv.addr})
		t.Cleanup(func() { _ = admins[i].Close() })
		require.NoError(t, admins[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", i*16384/n, (i+1)*16384/n-1).Err())
	}
	for i := 1; i < n; i++ {
		host, port, _ := net.SplitHostPort(addrs[i])
		require.NoError(t, admins[0].Do(ctx, "CLUSTER", "MEET", host, port, buses[i]).Err())
	}
	waitFor(t, "the cluster to be ready", 30*time.Second, func(ctx context.Context) (bool, error) {
		for _, a := range admins {
			info, err := a.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d\r", n)) {
				return false, err
			}
		}
		return true, nil
	})
	return addrs
}

// TestBatchCluster: on a Cluster of three primaries a batch sends one script
// per hash slot, every script's keys in its slot (else CROSSSLOT), in one
// round trip per node, and takes every name; another provider's batch then
// takes none.
func TestBatchCluster(t *testing.T) {
	t.Parallel()
	addrs := startCluster(t, 3)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addrs[0]})
	t.Cleanup(func() { _ = admin.Close() })
	trips := &roundTrips{}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Dialer: trips.dial, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	log := &commandLog{}
	c.AddHook(log)
	p := newProvider(t, c)

	names := []string{"a{grp}1", "a{grp}2", "b{grp}", "x}y", "a{b"}
	warm := make([]shedlock.LockConfig, 0, 30)
	for i := range 30 {
		names = append(names, "job-"+strconv.Itoa(i))
		// The eviction check, the slot map and the script on every node.
		warm = append(warm, minute("warm-"+strconv.Itoa(i)))
	}
	mustBatch(t, p, warm...)
	trips.take()
	log.take()

	cfgs := make([]shedlock.LockConfig, len(names))
	wantSlots := map[int64]bool{}
	for i, name := range names {
		cfgs[i] = minute(name)
		key := p.Key(name)
		s, err := admin.ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		assert.Equal(t, int(s), shedlockredis.Slot(key), "the slot of %q", key)
		wantSlots[s] = true
	}
	res := mustBatch(t, p, cfgs...)
	for i, r := range res {
		require.NoError(t, r.Err, names[i])
		_, fenced := shedlock.FenceOf(r.Lock)
		assert.Equal(t, shedlockredis.FenceKey(p.Key(names[i])) != "", fenced, "a token for %q", names[i])
	}

	sent := log.take()
	assert.Len(t, sent, len(wantSlots), "one script per slot")
	seen := map[string]int{}
	for _, cmd := range sent {
		require.Equal(t, "evalsha", cmd[0])
		numKeys, _ := cmd[2].(int)
		var slots []int64
		for _, k := range cmd[3 : 3+numKeys] {
			key, _ := k.(string)
			seen[key]++
			slots = append(slots, admin.ClusterKeySlot(ctx, key).Val())
		}
		for _, s := range slots {
			assert.Equal(t, slots[0], s, "a script's keys in two slots: %v", cmd[3:3+numKeys])
		}
	}
	for _, name := range names {
		assert.Equal(t, 1, seen[p.Key(name)], "%q sent once", name)
	}
	perNode := trips.take()
	t.Logf("%d names, %d slots, round trips per node %v", len(names), len(wantSlots), perNode)
	assert.Len(t, perNode, len(addrs), "the names span every node")
	for addr, n := range perNode {
		assert.Equal(t, 1, n, "round trips to %s", addr)
	}

	other := newProvider(t, c)
	for i, r := range mustBatch(t, other, cfgs...) {
		assert.ErrorIs(t, r.Err, shedlock.ErrNotAcquired, names[i])
	}
}
