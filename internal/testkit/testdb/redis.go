package testdb

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

// LocalRedisAddr is the Redis server the machines of this project run.
const LocalRedisAddr = "127.0.0.1:6379"

var foundRedis = sync.OnceValues(findRedis) // one probe per test binary

// RedisAddr returns the address of the Redis test server: SHEDLOCK_REDIS_ADDR if
// set, else the local server. When neither answers it skips t, or fails it under
// CI=true.
func RedisAddr(t testing.TB) string {
	t.Helper()
	addr, err := foundRedis()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis for tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no Redis for tests: %v", err)
	}
	return addr
}

func findRedis() (string, error) {
	if addr := os.Getenv("SHEDLOCK_REDIS_ADDR"); addr != "" {
		if err := privatedb.PingRedis(addr); err != nil {
			return "", fmt.Errorf("SHEDLOCK_REDIS_ADDR=%s does not answer: %w", addr, err)
		}
		return addr, nil
	}
	if err := privatedb.PingRedis(LocalRedisAddr); err != nil {
		return "", fmt.Errorf("SHEDLOCK_REDIS_ADDR unset; %s: %w", LocalRedisAddr, err)
	}
	return LocalRedisAddr, nil
}
