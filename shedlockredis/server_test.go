package shedlockredis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// localAddr is the server the machines of this project run.
const localAddr = "127.0.0.1:6379"

var found = sync.OnceValues(findServer) // one probe (and at most one container) per test binary

// serverAddr returns the Redis the tests run against: SHEDLOCK_REDIS_ADDR, else
// the local server, else a redis-server started from PATH for this test binary.
// Without one the test skips, loudly; under CI=true it fails.
func serverAddr(t testing.TB) string {
	t.Helper()
	addr, err := found()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis for tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no Redis for tests: %v", err)
	}
	return addr
}

func findServer() (string, error) {
	if addr := os.Getenv("SHEDLOCK_REDIS_ADDR"); addr != "" {
		if err := ping(addr); err != nil {
			return "", fmt.Errorf("SHEDLOCK_REDIS_ADDR=%s does not answer: %w", addr, err)
		}
		return addr, nil
	}
	localErr := ping(localAddr)
	if localErr == nil {
		return localAddr, nil
	}
	srv, err := startServer("")
	if err != nil {
		return "", fmt.Errorf("SHEDLOCK_REDIS_ADDR unset; %s: %v; own redis-server: %w", localAddr, localErr, err)
	}
	spawned.Store(srv)
	return srv.addr, nil
}

func ping(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// newClient returns a client of its own on the test server, as a separate pod
// would have, closed when t ends.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: serverAddr(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newEnv returns an env no other test uses, and deletes its keys when t ends, so
// that tests run in parallel on one server without meeting.
func newEnv(t testing.TB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	env := "test-" + hex.EncodeToString(b[:])
	addr := serverAddr(t)
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		deleteKeys(c, shedlockredis.KeyPrefix+":"+env+":*")
		deleteKeys(c, "{"+shedlockredis.KeyPrefix+":"+env+":*") // fence keys
	})
	return env
}

func deleteKeys(c redis.UniversalClient, pattern string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		_ = c.Del(ctx, iter.Val()).Err()
	}
}

// uniqueName returns a lock name no other test uses, for tests that must use
// the default env, as Java pods do.
func uniqueName(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "job-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		key := shedlockredis.KeyPrefix + ":" + shedlockredis.DefaultEnv + ":" + name
		_ = c.Del(context.Background(), key, shedlockredis.FenceKey(key)).Err()
	})
	return name
}

func newProvider(t testing.TB, c redis.UniversalClient, opts ...shedlockredis.Option) *shedlockredis.Provider {
	t.Helper()
	p, err := shedlockredis.NewProvider(c, opts...)
	require.NoError(t, err)
	return p
}

// newStore is the shedlocktest store: an env of its own, and providers each
// with a client of its own.
func newStore(t *testing.T) shedlocktest.NewProviderFunc {
	env := newEnv(t)
	return func(t *testing.T) shedlock.LockProvider {
		return newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	}
}

// commandLog records what a client dials and sends.
type commandLog struct {
	dials atomic.Int64
	mu    sync.Mutex
	cmds  [][]any
}

func (h *commandLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.dials.Add(1)
		return next(ctx, network, addr)
	}
}

func (h *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

func (h *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.record(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *commandLog) record(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cmds = append(h.cmds, cmd.Args())
}

// take returns the commands sent since the last take, and forgets them.
func (h *commandLog) take() [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	cmds := h.cmds
	h.cmds = nil
	return cmds
}

// logged returns a client on addr that records into a new commandLog.
func logged(t testing.TB, addr string) (*redis.Client, *commandLog) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	log := &commandLog{}
	c.AddHook(log)
	return c, log
}
