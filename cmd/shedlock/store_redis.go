package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock/shedlockredis"
)

// openRedis opens the locks of shedlockredis (and Java ShedLock's
// RedisLockProvider) under -env, through the provider's own Admin.
func openRedis(ctx context.Context, c config, _ bool) (*store, error) {
	opts, err := redis.ParseURL(c.dsn)
	if err != nil {
		return nil, usageError{fmt.Sprintf("-dsn: not a Redis URL (redis://host:6379/0): %v", err)}
	}
	// The command's -timeout bounds every command, also one already sent.
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("connect to redis at %s: %w", opts.Addr, err)
	}
	p, err := shedlockredis.NewProvider(client, shedlockredis.WithEnv(c.env), shedlockredis.WithLockedBy("shedlock-cli"))
	if err != nil {
		_ = client.Close()
		return nil, usageError{err.Error()}
	}
	return &store{Admin: p, where: "env " + display(c.env), close: client.Close}, nil
}
