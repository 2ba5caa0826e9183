package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// redisThroughProxy returns a provider whose client, with go-redis's default
// retries (MaxRetries 3), reaches Redis through a fault proxy, with its scripts
// loaded, and a provider on the same env that reaches Redis directly.
func redisThroughProxy(t *testing.T) (px *faultproxy.Proxy, a, b *shedlockredis.Provider) {
	t.Helper()
	const upstream = "127.0.0.1:6379"
	direct := redis.NewClient(&redis.Options{Addr: upstream})
	t.Cleanup(func() { _ = direct.Close() })
	if err := direct.Ping(context.Background()).Err(); err != nil {
		t.Skipf("no Redis at %s: %v", upstream, err)
	}
	px, err := faultproxy.Start(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	var r [4]byte
	_, _ = rand.Read(r[:])
	env := "retry-" + hex.EncodeToString(r[:])
	proxied := redis.NewClient(&redis.Options{Addr: px.Addr()})
	t.Cleanup(func() { _ = proxied.Close() })
	t.Cleanup(func() {
		ctx := context.Background()
		for _, name := range []string{"job", "warm-up"} {
			key := "job-lock:" + env + ":" + name
			direct.Del(ctx, key, "{"+key+"}:fence", "{"+key+"}:released")
		}
	})
	if a, err = shedlockredis.NewProvider(proxied, shedlockredis.WithEnv(env)); err != nil {
		t.Fatal(err)
	}
	if b, err = shedlockredis.NewProvider(direct, shedlockredis.WithEnv(env)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := a.TryLock(ctx, shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return px, a, b
}

// go-redis sends a command again when its connection is reset before the
// answer. An Extend to a shorter LockAtMostFor so sent twice must not cut the
// lock's LockAtLeastFor short: after Unlock, another pod may not take the
// lock until LockAtLeastFor has passed.
func TestRedisClientRetryOfExtendKeepsLockAtLeastFor(t *testing.T) {
	px, a, b := redisThroughProxy(t)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 20 * time.Second}
	start := time.Now()
	l, err := a.TryLock(ctx, cfg)
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
	if got, err := b.TryLock(ctx, cfg); err == nil {
		defer got.Unlock(ctx)
		t.Fatalf("another pod took the lock %v after it was taken with LockAtLeastFor %v (Extend's connection was reset after the server ran it; go-redis sent it again)",
			time.Since(start).Round(time.Millisecond), cfg.LockAtLeastFor)
	}
}

// go-redis's own resend of a release whose connection was reset after the
// server ran it finds the release done: Unlock reports nil, not a lost lock,
// and the lock is free.
func TestRedisClientRetryOfUnlockReportsReleased(t *testing.T) {
	px, a, b := redisThroughProxy(t)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := a.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fired := px.ResetOnNextRequest(true)
	err = l.Unlock(ctx)
	select {
	case <-fired:
	default:
		t.Fatal("the reset did not fire")
	}
	if err != nil {
		t.Fatalf("Unlock whose connection was reset after the server released the lock, sent again by go-redis: want nil, got %v", err)
	}
	other, err := b.TryLock(ctx, cfg)
	if err != nil {
		t.Fatalf("another pod after the release: %v", err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
