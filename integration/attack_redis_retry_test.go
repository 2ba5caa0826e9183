package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// go-redis sends a command again when its connection is reset before the
// answer (MaxRetries, 3 by default). An Extend to a shorter LockAtMostFor so
// sent twice must not cut the lock's LockAtLeastFor short: after Unlock,
// another pod may not take the lock until LockAtLeastFor has passed.
func TestAttackRedisClientRetryOfExtendKeepsLockAtLeastFor(t *testing.T) {
	const upstream = "127.0.0.1:6379"
	if err := redis.NewClient(&redis.Options{Addr: upstream}).Ping(context.Background()).Err(); err != nil {
		t.Skipf("no Redis at %s: %v", upstream, err)
	}
	px, err := faultproxy.Start(upstream)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	env := "attack-" + hex.EncodeToString(b[:])
	ca := redis.NewClient(&redis.Options{Addr: px.Addr()}) // go-redis's default retries
	defer ca.Close()
	cb := redis.NewClient(&redis.Options{Addr: upstream})
	defer cb.Close()
	defer cb.Del(context.Background(), "job-lock:"+env+":job", "job-lock:"+env+":warm-up")
	pa, err := shedlockredis.NewProvider(ca, shedlockredis.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := shedlockredis.NewProvider(cb, shedlockredis.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := pa.TryLock(ctx, shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Extend(ctx, time.Minute, 0) // the scripts are loaded
	_ = w.Unlock(ctx)

	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 20 * time.Second}
	start := time.Now()
	l, err := pa.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fired := px.ResetOnNextRequest(true)
	if err := l.Extend(ctx, 20*time.Second, 20*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	select {
	case <-fired:
	default:
		t.Fatal("the reset did not fire")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if got, err := pb.TryLock(ctx, cfg); err == nil {
		defer got.Unlock(ctx)
		t.Fatalf("another pod took the lock %v after it was taken with LockAtLeastFor %v (Extend's connection was reset after the server ran it; go-redis sent it again)",
			time.Since(start).Round(time.Millisecond), cfg.LockAtLeastFor)
	}
}

// The package's doc: "An Unlock that fails the same way after the server
// released the lock reports ErrReleaseFailed; the lock is already free". With
// go-redis's own retry of the release, the second send finds the key gone and
// Unlock reports the lock lost, which the executor logs as a release failure
// of a lock it did release.
func TestAttackRedisClientRetryOfUnlockReportsLost(t *testing.T) {
	const upstream = "127.0.0.1:6379"
	if err := redis.NewClient(&redis.Options{Addr: upstream}).Ping(context.Background()).Err(); err != nil {
		t.Skipf("no Redis at %s: %v", upstream, err)
	}
	px, err := faultproxy.Start(upstream)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	env := "attack-" + hex.EncodeToString(b[:])
	ca := redis.NewClient(&redis.Options{Addr: px.Addr()})
	defer ca.Close()
	defer ca.Del(context.Background(), "job-lock:"+env+":job")
	pa, err := shedlockredis.NewProvider(ca, shedlockredis.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	w, err := pa.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Unlock(ctx) // the scripts are loaded
	l, err := pa.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fired := px.ResetOnNextRequest(true)
	err = l.Unlock(ctx)
	<-fired
	if err != nil && !errors.Is(err, shedlock.ErrReleaseFailed) {
		t.Fatalf("Unlock whose answer was lost after the server released the lock: want nil or ErrReleaseFailed, got %v", err)
	}
}
