package shedlockredis_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// roundTrips counts, per server address, how often a client's connections
// begin to write after a read (or for the first time): one request and its
// reply, however many writes and reads each takes.
type roundTrips struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *roundTrips) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: conn, trips: r, addr: addr}, nil
}

// take returns the counts since the last take, and forgets them.
func (r *roundTrips) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

type countedConn struct {
	net.Conn
	trips   *roundTrips
	addr    string
	mu      sync.Mutex
	writing bool
}

func (c *countedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if !c.writing {
		c.writing = true
		c.trips.mu.Lock()
		if c.trips.n == nil {
			c.trips.n = map[string]int{}
		}
		c.trips.n[c.addr]++
		c.trips.mu.Unlock()
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *countedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	c.writing = false
	c.mu.Unlock()
	return c.Conn.Read(b)
}

// commandCalls returns how many times the server has run cmd (INFO commandstats).
func commandCalls(t *testing.T, c *redis.Client, cmd string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if stats, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":"); ok {
			var calls int
			_, err := fmt.Sscanf(stats, "calls=%d", &calls)
			require.NoError(t, err, line)
			return calls
		}
	}
	return 0
}

// TestBatchOneRoundTrip: a batch of 300 locks, some held, is one round trip
// and one EVALSHA on a single server, once the server is known not to evict
// and has the script; the first batch adds the eviction check and the EVAL
// of a server that had not seen the script.
func TestBatchOneRoundTrip(t *testing.T) {
	t.Parallel()
	srv := startServerFor(t, "") // its own command counts
	trips := &roundTrips{}
	c := redis.NewClient(&redis.Options{Addr: srv.addr, Dialer: trips.dial, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	admin := redis.NewClient(&redis.Options{Addr: srv.addr})
	t.Cleanup(func() { _ = admin.Close() })
	p := newProvider(t, c)
	ctx := context.Background()
	require.NoError(t, c.Ping(ctx).Err()) // the connection's handshake, before counting
	trips.take()

	const size = 300
	batch := func(round int) []shedlock.LockConfig {
		cfgs := make([]shedlock.LockConfig, size)
		for i := range cfgs {
			// Every third name is one the previous round took: held.
			n := round*size + i
			if i%3 == 0 && round > 0 {
				n = (round-1)*size + i + 1
			}
			cfgs[i] = minute("job-" + strconv.Itoa(n))
		}
		return cfgs
	}
	res := mustBatch(t, p, batch(0)...)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	first := trips.take()[srv.addr]
	t.Logf("first batch: %d round trips (eviction check, EVALSHA, EVAL)", first)
	assert.Equal(t, 3, first)

	for round := 1; round <= 3; round++ {
		evalsha := commandCalls(t, admin, "evalsha")
		start := time.Now()
		res := mustBatch(t, p, batch(round)...)
		took := time.Since(start)
		got := trips.take()
		evalsha = commandCalls(t, admin, "evalsha") - evalsha
		t.Logf("batch of %d: %d round trips, %d EVALSHA, %v", size, got[srv.addr], evalsha, took)
		assert.Equal(t, map[string]int{srv.addr: 1}, got, "one round trip per batch")
		assert.Equal(t, 1, evalsha, "one script per batch")
		for i, r := range res {
			if i%3 == 0 {
				assert.ErrorIs(t, r.Err, shedlock.ErrNotAcquired, "entry %d", i)
			} else {
				assert.NoError(t, r.Err, "entry %d", i)
			}
		}
	}
}

// BenchmarkBatch300 compares one batch of 300 attempts on free names with 300
// TryLocks one after another, on the test server.
func BenchmarkBatch300(b *testing.B) {
	p := newProvider(b, newClient(b), shedlockredis.WithEnv(newEnv(b)))
	ctx := context.Background()
	cfgs := func(round int) []shedlock.LockConfig {
		c := make([]shedlock.LockConfig, 300)
		for i := range c {
			c[i] = shedlock.LockConfig{Name: strconv.Itoa(round*len(c) + i), LockAtMostFor: 10 * time.Second}
		}
		return c
	}
	_, err := p.TryLock(ctx, minute("warm")) // the eviction check, out of the count
	require.NoError(b, err)
	round := 0
	b.Run("TryLockBatch", func(b *testing.B) {
		for b.Loop() {
			round++
			_, err := p.TryLockBatch(ctx, cfgs(round))
			require.NoError(b, err)
		}
	})
	b.Run("TryLock", func(b *testing.B) {
		for b.Loop() {
			round++
			for _, cfg := range cfgs(round) {
				_, err := p.TryLock(ctx, cfg)
				require.NoError(b, err)
			}
		}
	})
}
