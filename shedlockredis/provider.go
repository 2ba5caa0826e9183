package shedlockredis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// KeyPrefix begins every lock's key, job-lock:<env>:<name>, as in Java ShedLock.
const KeyPrefix = "job-lock"

// Provider takes locks in Redis, one key per lock name. It is safe for
// concurrent use and keeps no state per name.
type Provider struct {
	client  redis.UniversalClient
	keys    kvstore.Space  // job-lock:<env>:
	owner   *kvstore.Owner // values ADDED:<time>@<lockedBy>:<token of this provider>-<count>
	acquire *redis.Script
	batch   *redis.Script
	release *redis.Script
	extend  *redis.Script
	// CatchUp's (see fire.go)
	fireAcquire *redis.Script
	fireRelease *redis.Script
	now         func() time.Time // the time written into values, for readers only

	evictionAllowed bool
	checked         atomic.Bool   // the server was found not to evict
	checking        chan struct{} // one slot: the check in progress
}

var (
	_ shedlock.LockProvider  = (*Provider)(nil)
	_ shedlock.BatchLocker   = (*Provider)(nil)
	_ shedlock.ConfigChecker = (*Provider)(nil)
	_ shedlock.PoolSizer     = (*Provider)(nil)
)

// NewProvider returns a provider on client: a single server, Sentinel or Cluster
// client. It sends nothing: the server is first asked at the first TryLock, so
// a service can start while Redis is down. A nil client, a nil option or a bad
// option's value is an error wrapping [shedlock.ErrInvalidOption].
func NewProvider(client redis.UniversalClient, opts ...Option) (*Provider, error) {
	o := options{Options: kvstore.Options{Env: DefaultEnv}}
	if err := kvstore.Configure("shedlockredis.NewProvider", isNil(client), &o, opts); err != nil {
		return nil, err
	}
	return &Provider{
		client:  client,
		keys:    kvstore.NewSpace(KeyPrefix, o.Env),
		owner:   kvstore.NewOwner(o.LockedBy, ':', '-'),
		acquire: redis.NewScript(acquireScript),
		batch:   redis.NewScript(batchAcquireScript),
		release: redis.NewScript(releaseScript),
		extend:  redis.NewScript(extendScript),
		now:     time.Now,

		fireAcquire: redis.NewScript(fireAcquireScript),
		fireRelease: redis.NewScript(fireReleaseScript),

		evictionAllowed: o.evictionAllowed,
		checking:        make(chan struct{}, 1),
	}, nil
}

// isNil reports a nil client, including a nil pointer of a client type.
func isNil(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case nil:
		return true
	case *redis.Client:
		return c == nil
	case *redis.ClusterClient:
		return c == nil
	case *redis.Ring:
		return c == nil
	}
	return false
}

// LockedBy returns the owner this provider writes into lock values.
func (p *Provider) LockedBy() string { return p.owner.LockedBy() }

// PoolSize reports the client's connections per server (PoolSize, or
// MaxActiveConns when smaller); 0 for a client of another kind. An executor
// keeps its commands in flight within it (see shedlock.WithMaxInFlight).
func (p *Provider) PoolSize() int {
	size, active := 0, 0
	switch c := p.client.(type) {
	case *redis.Client:
		size, active = c.Options().PoolSize, c.Options().MaxActiveConns
	case *redis.ClusterClient:
		size, active = c.Options().PoolSize, c.Options().MaxActiveConns
	case *redis.Ring:
		size, active = c.Options().PoolSize, c.Options().MaxActiveConns
	}
	if active > 0 && active < size {
		return active
	}
	return size
}

// Key returns the Redis key of the lock named name.
func (p *Provider) Key(name string) string { return p.keys.Key(name) }

// CheckConfig reports whether cfg is valid; it touches no server.
func (p *Provider) CheckConfig(cfg shedlock.LockConfig) error { return cfg.Validate() }

// TryLock makes one attempt to take cfg's lock, with SET key value NX PX
// <LockAtMostFor in ms, rounded up>: ErrNotAcquired when the key exists. The
// SET runs in a script that also writes the lock's fencing token (see
// shedlock.FenceOf and FenceKey), in the same round trip, and that first
// refuses a name an operator paused (Pause) with shedlock.ErrPaused, reading
// its PausedKey: no round trip more. An invalid cfg is an
// error wrapping shedlock.ErrInvalidConfig, before any command. A failed
// command is returned as an error, never as a lock.
//
// Until a server has been found safe, TryLock first reads its maxmemory and
// maxmemory-policy (one CONFIG GET, or INFO memory where CONFIG is refused; on
// a Cluster, every primary) and refuses a server that may evict keys with an
// error wrapping shedlock.ErrUnsafeStore, unless WithEvictionAllowed is given.
func (p *Provider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return p.TryLockChecked(ctx, cfg, lockcfg.Checked{})
}

// TryLockChecked is TryLock on a config the executor has validated
// (lockcfg.Checked, which only this repository's modules can name).
func (p *Provider) TryLockChecked(ctx context.Context, cfg shedlock.LockConfig, _ lockcfg.Checked) (shedlock.Lock, error) {
	l, err := p.prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if l.keys[1] == "" {
		err = p.client.Do(ctx, l.set[:]...).Err()
	} else {
		l.fence, err = p.acquire.Run(ctx, p.client, l.keys[:], l.set[2], l.set[5]).Int64()
	}
	if err := l.taken(ctx, err); err != nil {
		return nil, err
	}
	return l, nil
}

// prepare checks the server on first use, and returns the handle of an
// acquisition of cfg, checked by its caller, about to be sent.
func (p *Provider) prepare(ctx context.Context, cfg shedlock.LockConfig) (*lock, error) {
	if err := p.checkServer(ctx); err != nil {
		if errors.Is(err, shedlock.ErrUnsafeStore) {
			return nil, err
		}
		return nil, fmt.Errorf("shedlock: acquire %q: %w", cfg.Name, err)
	}
	return p.newLock(cfg), nil
}

// taken reads the outcome err of l's acquiring command: nil when it took the
// key, ErrNotAcquired when the key exists (redis.Nil), ErrPaused when the
// script found the name paused (pausedReply).
func (l *lock) taken(ctx context.Context, err error) error {
	l.acquired = time.Now()
	if errors.Is(err, redis.Nil) {
		return shedlock.ErrNotAcquired
	}
	if err != nil {
		return fmt.Errorf("shedlock: acquire %q: %w", l.name, withContext(ctx, err))
	}
	if l.fence == pausedReply {
		return shedlock.ErrPaused
	}
	return nil
}

// newLock returns the handle of an acquisition of cfg about to be sent: a
// value of its own, and the arguments of its commands boxed once.
func (p *Provider) newLock(cfg shedlock.LockConfig) *lock {
	l := &lock{p: p, name: cfg.Name, ttl: millis(cfg.LockAtMostFor), least: millis(cfg.LockAtLeastFor)}
	var key string
	key, l.value, l.keys[1], l.releaseKeys[1], l.keys[2] = p.keyValue(cfg.Name)
	l.keys[0], l.releaseKeys[0] = key, key
	l.set = [...]any{"set", key, l.value, "nx", "px", l.ttl}
	l.release = [...]any{l.set[2], nil, l.set[5]}
	l.ends = time.Now().Add(time.Duration(l.ttl) * time.Millisecond)
	return l
}

// FenceKey returns the key that holds the last fencing token of the lock whose
// key is key, in the same Cluster hash slot: "{" + key + "}:fence", or, for a
// key that has a hash tag of its own (a name with {tag}), "{tag}:fence:" + key.
// No lock key has either form: every one begins with KeyPrefix. A key with a
// "}" but no hash tag can have no such key; its locks take no token, and
// FenceKey returns "".
func FenceKey(key string) string { return besideKey(key, "fence") }

// withContext adds ctx's error to err when ctx has ended: a client with
// ContextTimeoutEnabled reports a deadline as an i/o timeout, often before
// ctx.Err() says so, and callers ask errors.Is(err, context.DeadlineExceeded).
func withContext(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if d, ok := ctx.Deadline(); ok && cerr == nil && !time.Now().Before(d) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// keyValue returns the key of the lock named name, a value no other
// acquisition has, and the key's fence key (see FenceKey), released key
// (see releasedKey) and paused key (see PausedKey). The value is Java's form, ADDED:<time>@<lockedBy>:<token>,
// where the token is this provider's random token and a count of its
// acquisitions. All five are cut from one string, one allocation, unless the
// key has a brace.
func (p *Provider) keyValue(name string) (key, value, fence, released, paused string) {
	var buf [320]byte
	b := append(buf[:0], p.keys.Prefix()...)
	b = append(b, name...)
	n := len(b)
	braces := bytes.ContainsAny(b[:n], "{}") // the env may have one too
	b = p.owner.AppendValue(b, p.now())
	m := len(b)
	if !braces {
		b = append(b, '{')
		b = append(b, b[:n]...)
		b = append(b, "}:fence"...)
	}
	f := len(b)
	if !braces {
		b = append(b, '{')
		b = append(b, b[:n]...)
		b = append(b, "}:released"...)
	}
	r := len(b)
	if !braces {
		b = append(b, '{')
		b = append(b, b[:n]...)
		b = append(b, "}:paused"...)
	}
	s := string(b)
	key, value = s[:n], s[n:m]
	if braces {
		return key, value, FenceKey(key), releasedKey(key), PausedKey(key)
	}
	return key, value, s[m:f], s[f:r], s[r:]
}

// millis returns d in whole milliseconds, rounded up: a lock is never shorter
// than asked.
func millis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}
