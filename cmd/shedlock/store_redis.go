package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// redisStore is the locks of shedlockredis (and Java ShedLock's
// RedisLockProvider) under one env: a key job-lock:<env>:<name> per lock, whose
// value is ADDED:<time>@<holder> and whose time to live is the lock's end.
type redisStore struct {
	client *redis.Client
	env    string
	prefix string
	// seen is the value of each lock as last shown, so that an unlock after a
	// question frees that acquisition and no other.
	seen map[string]string
}

// noExpiry is the TimeLeft of a key without a time to live (someone ran
// PERSIST): it stays held until deleted.
const noExpiry = time.Duration(-1)

func openRedis(ctx context.Context, c config) (*redisStore, error) {
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
	return &redisStore{client: client, env: c.env, prefix: shedlockredis.KeyPrefix + ":" + c.env + ":", seen: map[string]string{}}, nil
}

func (s *redisStore) Close() error  { return s.client.Close() }
func (s *redisStore) Where() string { return "env " + display(s.env) }

func (s *redisStore) Migrate(context.Context) error {
	return usageError{"migrate: Redis needs no table; its locks are keys " + s.prefix + "<name>"}
}

func (s *redisStore) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	var keys []string
	iter := s.client.Scan(ctx, 0, globEscape(s.prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan keys %s*: %w", s.prefix, err)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys) // SCAN may return a key twice
	locks := make([]shedlock.LockInfo, 0, len(keys))
	for _, chunk := range chunks(keys, 500) {
		infos, err := s.read(ctx, chunk)
		if err != nil {
			return nil, err
		}
		locks = append(locks, infos...)
	}
	return locks, nil
}

func (s *redisStore) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	infos, err := s.read(ctx, []string{s.prefix + name})
	if err != nil {
		return shedlock.LockInfo{}, err
	}
	if len(infos) == 0 {
		return shedlock.LockInfo{}, s.notFound(name)
	}
	return infos[0], nil
}

func (s *redisStore) notFound(name string) error {
	return fmt.Errorf("%w: %q in %s (no key %s: nobody holds it)", shedlock.ErrLockNotFound, name, s.Where(), display(s.prefix+name))
}

// read returns the locks of the keys that exist, in the order given, with the
// server's clock for their ends.
func (s *redisStore) read(ctx context.Context, keys []string) ([]shedlock.LockInfo, error) {
	pipe := s.client.Pipeline()
	now := pipe.Time(ctx)
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		gets[i] = pipe.Get(ctx, k)
		ttls[i] = pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read keys: %w", err)
	}
	serverNow, err := now.Result()
	if err != nil {
		return nil, fmt.Errorf("read the server's clock: %w", err)
	}
	var infos []shedlock.LockInfo
	for i, k := range keys {
		value, err := gets[i].Result()
		if errors.Is(err, redis.Nil) {
			continue // expired or freed since the SCAN
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", display(k), err)
		}
		name := strings.TrimPrefix(k, s.prefix)
		s.seen[name] = value
		infos = append(infos, lockInfo(name, value, rawPTTL(ttls[i]), serverNow))
	}
	return infos, nil
}

// rawPTTL is a PTTL reply in milliseconds: -1 for no expiry, -2 for no key.
func rawPTTL(cmd *redis.DurationCmd) int64 {
	d := cmd.Val()
	if d < 0 {
		return int64(d) // go-redis passes -1 and -2 through as they are
	}
	return d.Milliseconds()
}

// lockInfo reads a lock's value: ADDED:<time>@<holder>, where the time is the
// holder's clock when it took the lock (for people only: nothing compares it).
// A value of another form is shown whole as the holder.
func lockInfo(name, value string, pttlMS int64, serverNow time.Time) shedlock.LockInfo {
	info := shedlock.LockInfo{Name: name, LockedBy: value}
	if rest, ok := strings.CutPrefix(value, "ADDED:"); ok {
		if at, by, ok := strings.Cut(rest, "@"); ok {
			if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
				info.LockedAt, info.LockedBy = t.UTC(), by
			}
		}
	}
	switch {
	case pttlMS == -1:
		info.Held, info.TimeLeft = true, noExpiry
	case pttlMS >= 0:
		info.TimeLeft = time.Duration(pttlMS) * time.Millisecond
		info.Held = info.TimeLeft > 0
		info.LockUntil = serverNow.Add(info.TimeLeft).UTC().Truncate(time.Millisecond)
	}
	return info
}

// unlockScript deletes the key if it holds ARGV[1] (any value when ARGV[1] is
// empty) and returns {1, value, PTTL} of what it deleted, {2, value, PTTL} of
// what it found instead, or {0} when there is no key: the check and the delete
// are one step, so a lock taken meanwhile by another holder is never freed.
var unlockScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
local pttl = redis.call('PTTL', KEYS[1])
if ARGV[1] ~= '' and v ~= ARGV[1] then return {2, v, pttl} end
redis.call('DEL', KEYS[1])
return {1, v, pttl}
`)

func (s *redisStore) Unlock(ctx context.Context, name string, shown *shedlock.LockInfo) (shedlock.LockInfo, error) {
	want := ""
	if shown != nil {
		want = s.seen[name]
		if want == "" { // shown but never read here: read it now
			if _, err := s.Inspect(ctx, name); err != nil {
				return shedlock.LockInfo{}, err
			}
			want = s.seen[name]
		}
	}
	key := s.prefix + name
	now, err := s.client.Time(ctx).Result()
	if err != nil {
		return shedlock.LockInfo{}, fmt.Errorf("read the server's clock: %w", err)
	}
	reply, err := unlockScript.Run(ctx, s.client, []string{key}, want).Slice()
	if err != nil {
		return shedlock.LockInfo{}, fmt.Errorf("unlock %s: %w", display(key), err)
	}
	if len(reply) != 3 {
		return shedlock.LockInfo{}, s.notFound(name)
	}
	value, _ := reply[1].(string)
	pttl, _ := reply[2].(int64)
	info := lockInfo(name, value, pttl, now)
	if reply[0] == int64(2) {
		return info, changedHandsError{info}
	}
	return info, nil
}

// globEscape quotes the characters SCAN's MATCH pattern would read as a glob.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func chunks(s []string, n int) [][]string {
	var out [][]string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}
