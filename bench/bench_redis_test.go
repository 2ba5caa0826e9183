package bench_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock/shedlockredis"
)

// redisAddr returns the Redis to measure: SHEDLOCK_REDIS_ADDR, else the local
// server. Without one the benchmark skips, loudly; under CI=true it fails.
func redisAddr(b *testing.B) string {
	b.Helper()
	addr := os.Getenv("SHEDLOCK_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("no Redis at %s (CI=true, so this fails): %v", addr, err)
		}
		b.Skipf("SKIPPING: no Redis at %s: %v", addr, err)
	}
	return addr
}

// newRedisClient returns a client with one connection, so that every way of
// cycling runs on the same connection, as the serial loop of a benchmark would.
func newRedisClient(b *testing.B, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// redisBenchEnv returns an env of its own for one benchmark, its keys deleted
// when it ends.
func redisBenchEnv(b *testing.B, c redis.UniversalClient) string {
	env := "bench-" + rand.Text()[:8]
	b.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, shedlockredis.KeyPrefix+":"+env+":*", 100).Iterator()
		for iter.Next(ctx) {
			_ = c.Del(ctx, iter.Val()).Err()
		}
	})
	return env
}

// redisFloor is the least any library can send for one cycle: the provider's
// acquire script (the pause's EXISTS, SET NX PX and the fencing token) and its
// release script, through the same client, arguments built once.
func redisFloor(c redis.UniversalClient, key string) func(context.Context) error {
	acquire, release := redis.NewScript(shedlockredis.LuaScripts().Acquire), redis.NewScript(shedlockredis.LuaScripts().Release)
	value := "ADDED:2000-01-01T00:00:00.000Z@floor:0-0"
	acqKeys := []string{key, shedlockredis.FenceKey(key), shedlockredis.PausedKey(key)}
	acqArgs := []any{value, benchMostFor.Milliseconds()}
	keys := acqKeys[:1]
	relArgs := []any{value, int64(0), benchMostFor.Milliseconds()}
	return func(ctx context.Context) error {
		if err := acquire.Run(ctx, c, acqKeys, acqArgs...).Err(); err != nil {
			return fmt.Errorf("floor acquire: %w", err)
		}
		n, err := release.Run(ctx, c, keys, relArgs...).Int64()
		if err != nil || n != 1 {
			return fmt.Errorf("floor release: %d, %v", n, err)
		}
		return nil
	}
}

// redisFloorSet is redisFloor without fencing tokens: a bare SET NX PX, as
// Java ShedLock sends and as the provider did before it wrote tokens.
func redisFloorSet(c redis.UniversalClient, key string) func(context.Context) error {
	release := redis.NewScript(shedlockredis.LuaScripts().Release)
	value := "ADDED:2000-01-01T00:00:00.000Z@floor:0-0"
	set := []any{"set", key, value, "nx", "px", benchMostFor.Milliseconds()}
	keys := []string{key}
	relArgs := []any{value, int64(0), benchMostFor.Milliseconds()}
	return func(ctx context.Context) error {
		if err := c.Do(ctx, set...).Err(); err != nil {
			return fmt.Errorf("floor SET: %w", err)
		}
		n, err := release.Run(ctx, c, keys, relArgs...).Int64()
		if err != nil || n != 1 {
			return fmt.Errorf("floor release: %d, %v", n, err)
		}
		return nil
	}
}

// checkSameScript fails b unless the provider's acquire and release are the
// floor's scripts, seen as the SHA1s of their EVALSHAs.
func checkSameScript(b *testing.B, addr string) {
	c := newRedisClient(b, addr)
	var mu sync.Mutex
	var shas []string
	c.AddHook(evalshaHook{func(sha string) { mu.Lock(); shas = append(shas, sha); mu.Unlock() }})
	p, err := shedlockredis.NewProvider(c, shedlockredis.WithEnv(redisBenchEnv(b, c)))
	if err != nil {
		b.Fatal(err)
	}
	l, err := p.TryLock(context.Background(), libCfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		b.Fatal(err)
	}
	want := []string{redis.NewScript(shedlockredis.LuaScripts().Acquire).Hash(), redis.NewScript(shedlockredis.LuaScripts().Release).Hash()}
	mu.Lock()
	defer mu.Unlock()
	if len(shas) != 2 || shas[0] != want[0] || shas[1] != want[1] {
		b.Fatalf("the provider's scripts are not the floor's: EVALSHA %v, floor %v: update shedlockredis.LuaScripts().Acquire and shedlockredis.LuaScripts().Release", shas, want)
	}
}

type evalshaHook struct{ seen func(sha string) }

func (evalshaHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h evalshaHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[0] == "evalsha" {
			h.seen(fmt.Sprint(args[1]))
		}
		return next(ctx, cmd)
	}
}
func (evalshaHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// newRedisCycleBench puts the library, the executor and the floor on one
// client and one connection.
func newRedisCycleBench(b *testing.B) *cycleBench {
	b.Helper()
	addr := redisAddr(b)
	checkSameScript(b, addr)
	c := newRedisClient(b, addr)
	env := redisBenchEnv(b, c)
	p, err := shedlockredis.NewProvider(c, shedlockredis.WithEnv(env))
	if err != nil {
		b.Fatal(err)
	}
	return newCycleBench(b, p, redisFloor(c, p.Key("floor")))
}

// BenchmarkRedisCycle measures one uncontended TryLock+Unlock cycle on Redis
// (library), the same SET and release script sent directly (floor), and
// Executor.Run with an empty task (executor).
func BenchmarkRedisCycle(b *testing.B) { benchCycles(b, newRedisCycleBench(b)) }

// BenchmarkRedisCycleVsFloor reports the library's and the executor's cycle on
// Redis as ratios to the floor measured in the same loop.
func BenchmarkRedisCycleVsFloor(b *testing.B) { benchVsFloor(b, newRedisCycleBench(b)) }

// BenchmarkRedisCycleFenceCost interleaves the floor with fencing tokens (the
// acquire script) and without (a bare SET NX PX), and reports what the token
// costs a cycle: fenced/set.
func BenchmarkRedisCycleFenceCost(b *testing.B) {
	c := newRedisClient(b, redisAddr(b))
	env := redisBenchEnv(b, c)
	p, err := shedlockredis.NewProvider(c, shedlockredis.WithEnv(env))
	if err != nil {
		b.Fatal(err)
	}
	cycles := []func(context.Context) error{redisFloor(c, p.Key("fenced")), redisFloorSet(c, p.Key("set"))}
	ctx := context.Background()
	for range 3 {
		for _, cycle := range cycles {
			if err := cycle(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	var spent [2]time.Duration
	i := 0
	for b.Loop() {
		for k := range cycles {
			j := (i + k) % len(cycles)
			t0 := time.Now()
			if err := cycles[j](ctx); err != nil {
				b.Fatal(err)
			}
			spent[j] += time.Since(t0)
		}
		i++
	}
	n := float64(i)
	b.ReportMetric(float64(spent[0])/n, "ns/op")
	b.ReportMetric(float64(spent[0])/n, "fenced-ns/cycle")
	b.ReportMetric(float64(spent[1])/n, "set-ns/cycle")
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "fenced/set")
}

// BenchmarkRedisPeers interleaves the floor, the library and the Redis locks a
// user would pick instead, bsm/redislock and go-redsync (one pool, so one
// Redis, as a shedlock user would run it), each an uncontended lock and
// release on a key of its own, and reports each one's time per cycle and its
// ratio to the floor.
func BenchmarkRedisPeers(b *testing.B) {
	addr := redisAddr(b)
	c := newRedisClient(b, addr)
	env := redisBenchEnv(b, c)
	p, err := shedlockredis.NewProvider(c, shedlockredis.WithEnv(env))
	if err != nil {
		b.Fatal(err)
	}
	locker := redislock.New(c)
	rs := redsync.New(redsyncgoredis.NewPool(c))
	rsMutex := rs.NewMutex(p.Key("redsync"), redsync.WithExpiry(benchMostFor), redsync.WithTries(1))
	rlKey := p.Key("redislock")

	cycles := []struct {
		name  string
		cycle func(context.Context) error
	}{
		{"floor", redisFloor(c, p.Key("floor"))},
		{"lib", func(ctx context.Context) error {
			l, err := p.TryLock(ctx, libCfg)
			if err != nil {
				return err
			}
			return l.Unlock(ctx)
		}},
		{"redislock", func(ctx context.Context) error {
			l, err := locker.Obtain(ctx, rlKey, benchMostFor, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
		{"redsync", func(ctx context.Context) error {
			if err := rsMutex.TryLockContext(ctx); err != nil {
				return err
			}
			ok, err := rsMutex.UnlockContext(ctx)
			if err == nil && !ok {
				err = errors.New("redsync: unlock not ok")
			}
			return err
		}},
	}
	ctx := context.Background()
	for range 3 { // warm up: scripts loaded, connection open
		for _, c := range cycles {
			if err := c.cycle(ctx); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	spent := make([]time.Duration, len(cycles))
	i := 0
	for b.Loop() {
		for k := range cycles {
			j := (i + k) % len(cycles)
			t0 := time.Now()
			if err := cycles[j].cycle(ctx); err != nil {
				b.Fatalf("%s: %v", cycles[j].name, err)
			}
			spent[j] += time.Since(t0)
		}
		i++
	}
	n := float64(i)
	floorNs := float64(spent[0]) / n
	b.ReportMetric(float64(spent[1])/n, "ns/op")
	for j, c := range cycles {
		b.ReportMetric(float64(spent[j])/n, c.name+"-ns/cycle")
		if j > 0 {
			b.ReportMetric(float64(spent[j])/n/floorNs, c.name+"/floor")
		}
	}
	b.StopTimer()
	for _, c := range cycles {
		b.ReportMetric(testing.AllocsPerRun(20, func() {
			if err := c.cycle(ctx); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
		}), c.name+"-allocs/cycle")
	}
}
