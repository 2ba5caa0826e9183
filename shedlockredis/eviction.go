package shedlockredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
)

// noEviction is the one maxmemory-policy that never deletes a key to make room.
const noEviction = "noeviction"

// checkServer refuses, on first use, a server that may evict lock keys. Only a
// server found safe is remembered: a refused or unreachable one is asked again
// at the next TryLock, so a fixed maxmemory-policy is seen without a restart.
func (p *Provider) checkServer(ctx context.Context) error {
	if p.evictionAllowed || p.checked.Load() {
		return nil
	}
	select {
	case p.checking <- struct{}{}: // one check at a time; the others wait for its verdict
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-p.checking }()
	if p.checked.Load() {
		return nil
	}
	if err := forEachPrimary(ctx, p.client, checkEviction); err != nil {
		return err
	}
	p.checked.Store(true)
	return nil
}

// forEachPrimary calls fn for every server that holds keys: each primary of a
// Cluster, each shard of a Ring, else the one server (the primary, for Sentinel).
func forEachPrimary(ctx context.Context, client redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Ring:
		return c.ForEachShard(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return checkEvictionOn(ctx, client, "")
}

func checkEviction(ctx context.Context, c *redis.Client) error {
	return checkEvictionOn(ctx, c, c.Options().Addr)
}

// checkEvictionOn reads the server's maxmemory and maxmemory-policy, by CONFIG
// GET where allowed, else by INFO memory (managed services rename or forbid
// CONFIG), and refuses a server that evicts.
func checkEvictionOn(ctx context.Context, c redis.Cmdable, addr string) error {
	server := "Redis"
	if addr != "" {
		server += " " + addr
	}
	maxmemory, policy, err := readEviction(ctx, c)
	if err != nil {
		var unreadable unreadableError
		if errors.As(err, &unreadable) {
			return fmt.Errorf("%w: %s: cannot read maxmemory-policy (%v): a server that evicts keys when its "+
				"memory is full deletes held locks; make sure it has maxmemory-policy %s or maxmemory 0, "+
				"then accept the risk with shedlockredis.WithEvictionAllowed", shedlock.ErrUnsafeStore, server, err, noEviction)
		}
		return fmt.Errorf("check maxmemory-policy of %s: %w", server, withContext(ctx, err))
	}
	if maxmemory == 0 || policy == noEviction {
		return nil
	}
	return fmt.Errorf("%w: %s has maxmemory %d and maxmemory-policy %s: when its memory is full it deletes "+
		"keys, held locks' keys too, and another pod then takes a lock that is still held; set "+
		"maxmemory-policy %s (or maxmemory 0), or accept the risk with shedlockredis.WithEvictionAllowed",
		shedlock.ErrUnsafeStore, server, maxmemory, policy, noEviction)
}

// unreadableError says that the server answered but told neither setting.
type unreadableError struct{ why string }

func (e unreadableError) Error() string { return e.why }

func readEviction(ctx context.Context, c redis.Cmdable) (maxmemory uint64, policy string, err error) {
	conf, confErr := c.ConfigGet(ctx, "maxmemory*").Result() // one pattern: Redis 6 takes no more
	if confErr == nil {
		maxmemory, policy, err = parseEviction(conf["maxmemory"], conf["maxmemory-policy"])
		if err == nil {
			return maxmemory, policy, nil
		}
		confErr = err
	} else if !isServerError(confErr) {
		return 0, "", confErr
	}
	info, infoErr := c.Info(ctx, "memory").Result()
	if infoErr != nil {
		if isServerError(infoErr) {
			return 0, "", unreadableError{fmt.Sprintf("CONFIG GET: %v; INFO memory: %v", confErr, infoErr)}
		}
		return 0, "", infoErr
	}
	fields := infoFields(info)
	maxmemory, policy, err = parseEviction(fields["maxmemory"], fields["maxmemory_policy"])
	if err != nil {
		return 0, "", unreadableError{fmt.Sprintf("CONFIG GET: %v; INFO memory: %v", confErr, err)}
	}
	return maxmemory, policy, nil
}

// isServerError reports an error the server replied with (an unknown, renamed
// or forbidden command), as opposed to a connection or a context that failed.
func isServerError(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && !errors.Is(err, redis.Nil)
}

func parseEviction(maxmemory, policy string) (uint64, string, error) {
	if maxmemory == "" || policy == "" {
		return 0, "", errors.New("no maxmemory or maxmemory-policy in the reply")
	}
	n, err := strconv.ParseUint(maxmemory, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("maxmemory %q: %w", maxmemory, err)
	}
	return n, policy, nil
}

// infoFields parses INFO's "name:value" lines.
func infoFields(info string) map[string]string {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if name, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok && !strings.HasPrefix(name, "#") {
			fields[name] = value
		}
	}
	return fields
}
