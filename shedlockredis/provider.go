package shedlockredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
)

// KeyPrefix begins every lock's key, job-lock:<env>:<name>, as in Java ShedLock.
const KeyPrefix = "job-lock"

// Provider takes locks in Redis, one key per lock name. It is safe for
// concurrent use and keeps no state per name.
type Provider struct {
	client   redis.UniversalClient
	lockedBy string
	prefix   string // job-lock:<env>:
	suffix   string // @<lockedBy>:<token of this provider>-
	seq      atomic.Uint64
	release  *redis.Script
	extend   *redis.Script
	now      func() time.Time // the time written into values, for readers only
}

var (
	_ shedlock.LockProvider  = (*Provider)(nil)
	_ shedlock.ConfigChecker = (*Provider)(nil)
)

// NewProvider returns a provider on client: a single server, Sentinel or Cluster
// client. It sends nothing: the first command is the first TryLock's SET, so a
// service can start while Redis is down. A nil client or a bad option is an
// error wrapping [shedlock.ErrInvalidOption].
func NewProvider(client redis.UniversalClient, opts ...Option) (*Provider, error) {
	if isNil(client) {
		return nil, fmt.Errorf("%w: shedlockredis.NewProvider: nil client", shedlock.ErrInvalidOption)
	}
	o := options{env: DefaultEnv}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: shedlockredis.NewProvider: nil Option", shedlock.ErrInvalidOption)
		}
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	if o.lockedBy == "" {
		o.lockedBy = hostName()
	}
	var token [6]byte
	_, _ = rand.Read(token[:]) // crypto/rand.Read never fails on supported platforms
	return &Provider{
		client:   client,
		lockedBy: o.lockedBy,
		prefix:   KeyPrefix + ":" + o.env + ":",
		suffix:   "@" + o.lockedBy + ":" + hex.EncodeToString(token[:]) + "-",
		release:  redis.NewScript(releaseScript),
		extend:   redis.NewScript(extendScript),
		now:      time.Now,
	}, nil
}

// hostName is the default owner: the value's token already makes each
// acquisition unique, so the owner is for people reading the keys.
func hostName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown-host"
	}
	return host
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
func (p *Provider) LockedBy() string { return p.lockedBy }

// Key returns the Redis key of the lock named name.
func (p *Provider) Key(name string) string { return p.prefix + name }

// CheckConfig reports whether cfg is valid; it touches no server.
func (p *Provider) CheckConfig(cfg shedlock.LockConfig) error { return cfg.Validate() }

// TryLock makes one attempt to take cfg's lock, with SET key value NX PX
// <LockAtMostFor in ms, rounded up>: ErrNotAcquired when the key exists. An
// invalid cfg is an error wrapping shedlock.ErrInvalidConfig, before any command.
// A failed command is returned as an error, never as a lock.
func (p *Provider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &lock{p: p, name: cfg.Name, ttl: millis(cfg.LockAtMostFor), least: millis(cfg.LockAtLeastFor)}
	l.keys[0], l.value = p.keyValue(cfg.Name)
	l.set = [...]any{"set", l.keys[0], l.value, "nx", "px", l.ttl}
	l.release = [...]any{l.set[2], nil, l.set[5]}
	err := p.client.Do(ctx, l.set[:]...).Err()
	if errors.Is(err, redis.Nil) {
		return nil, shedlock.ErrNotAcquired
	}
	if err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: %w", cfg.Name, withContext(ctx, err))
	}
	return l, nil
}

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

// keyValue returns the key of the lock named name, and a value no other
// acquisition has: Java's form, ADDED:<time>@<lockedBy>:<token>, where the token
// is this provider's random token and a count of its acquisitions. Both are cut
// from one string, one allocation.
func (p *Provider) keyValue(name string) (key, value string) {
	var buf [192]byte
	b := append(buf[:0], p.prefix...)
	b = append(b, name...)
	n := len(b)
	b = append(b, "ADDED:"...)
	b = p.now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, p.suffix...)
	b = strconv.AppendUint(b, p.seq.Add(1), 36)
	s := string(b)
	return s[:n], s[n:]
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
