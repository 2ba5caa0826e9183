package shedlockredis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
)

// lockNames returns the names of the provider's env that have a lock key, a
// paused key or a RunsKey, sorted, each once: one SCAN on every primary for
// the keys that contain the env's prefix, which the keys beside a lock's do.
func (p *Provider) lockNames(ctx context.Context) ([]string, error) {
	prefix := p.Key("")
	keys, err := p.scanKeys(ctx, "*"+globEscape(prefix)+"*")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		key, ok := k, strings.HasPrefix(k, prefix)
		if !ok {
			key, ok = besideLockKey(k, "paused")
		}
		if !ok {
			key, ok = besideLockKey(k, "runs")
		}
		if ok && strings.HasPrefix(key, prefix) {
			names = append(names, key[len(prefix):])
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// scanKeys returns the keys that match on every primary (SCAN may return a
// key twice: each is in keys as often).
func (p *Provider) scanKeys(ctx context.Context, match string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		iter := c.Scan(ctx, 0, match, scanCount).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := p.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	case *redis.Ring:
		err = c.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	default:
		err = scan(ctx, p.client)
	}
	if err != nil {
		return nil, fmt.Errorf("scan keys %s: %w", match, err)
	}
	return keys, nil
}

// readLocks returns, in the order given, the locks of those names that have
// a key, a pause or run-now requests: each name's keys read in one script,
// one per name in one pipeline, and the ends by the server's clock.
func (p *Provider) readLocks(ctx context.Context, names []string) ([]storedLock, error) {
	now, err := p.client.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("read the server's clock: %w", err)
	}
	pipe := p.client.Pipeline()
	reads := make([]*redis.Cmd, len(names))
	for i, name := range names {
		keys := []string{p.Key(name)}
		if paused := PausedKey(keys[0]); paused != "" {
			keys = append(keys, paused, RunsKey(keys[0]))
		}
		reads[i] = pipe.Eval(ctx, readControlScript, keys)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var locks []storedLock
	for i, name := range names {
		reply, err := reads[i].Slice()
		if err == nil && len(reply) != 4 {
			err = fmt.Errorf("the read script returned %d values", len(reply))
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p.Key(name), err)
		}
		l, ok, err := storedOf(name, reply, now)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p.Key(name), err)
		}
		if ok {
			locks = append(locks, l)
		}
	}
	return locks, nil
}

// storedOf makes a name's lock of readControlScript's reply; false when the
// name has no key, no pause and no run-now requests (expired or freed since
// the SCAN).
func storedOf(name string, reply []any, serverNow time.Time) (storedLock, bool, error) {
	value, _ := reply[0].(string)
	pttl, _ := reply[1].(int64)
	l := storedLock{shedlock.LockInfo{Name: name}, value}
	if value != "" {
		l.LockInfo = lockInfo(name, value, pttl, serverNow)
	}
	if paused, ok := reply[2].(string); ok {
		end, err := strconv.ParseInt(paused, 10, 64)
		if err != nil {
			return l, false, fmt.Errorf("its paused key holds %q, not milliseconds since 1970", paused)
		}
		l.Paused = true
		if end != 0 {
			l.PausedUntil = time.UnixMilli(end).UTC()
		}
	}
	if runs, ok := reply[3].(string); ok {
		n, err := strconv.ParseInt(runs, 10, 64)
		if err != nil {
			return l, false, fmt.Errorf("its run requests hold %q, not a count", runs)
		}
		l.RunRequests = max(n, 0)
	}
	return l, value != "" || l.Control != (shedlock.Control{}), nil
}
