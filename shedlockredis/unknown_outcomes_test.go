package shedlockredis_test

import (
	"context"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestUnknownOutcomes(t *testing.T) {
	shedlocktest.RunUnknownOutcomes(t, func(t *testing.T) shedlocktest.NewFaultyProviderFunc {
		env := newEnv(t)
		return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
			c := newClient(t)
			c.AddHook(faultHook{f})
			return newProvider(t, c, shedlockredis.WithEnv(env))
		}
	})
}

// faultHook passes every command that writes a lock through f: SET, DEL,
// PEXPIRE and the scripts. It sits outside the client's own retries, so a
// fault it sends back is not retried below it.
type faultHook struct{ f *shedlocktest.Faults }

// redisWrites are the commands that write a lock.
var redisWrites = map[string]bool{"set": true, "del": true, "pexpire": true, "eval": true, "evalsha": true, "fcall": true}

func (faultHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h faultHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !redisWrites[cmd.Name()] {
			return next(ctx, cmd)
		}
		return h.f.Do(ctx, func(ctx context.Context) error { return next(ctx, cmd) })
	}
}

// ProcessPipelineHook leaves pipelines alone: no Lock's TryLock, Extend or
// Unlock sends one.
func (faultHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
