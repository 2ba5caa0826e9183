package shedlocketcd

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// KeyPrefix begins every lock's key, shedlock:<env>:<name>, as in Java
// ShedLock's EtcdLockProvider.
const KeyPrefix = "shedlock"

// Provider takes locks in etcd, one key per lock name, each attached to a lease
// of its own. It is safe for concurrent use and keeps no state per name.
type Provider struct {
	client *clientv3.Client
	keys   kvstore.Space    // shedlock:<env>:
	owner  *kvstore.Owner   // values ADDED:<time>@<lockedBy>#<token of this provider>.<count>
	minTTL atomic.Int64     // the cluster's minimum lease TTL in seconds, as its grants showed it
	probe  probe            // learns minTTL before the first hold is sized
	now    func() time.Time // the time written into values, for readers only
}

var (
	_ shedlock.LockProvider    = (*Provider)(nil)
	_ shedlock.ConfigChecker   = (*Provider)(nil)
	_ shedlock.Admin           = (*Provider)(nil)
	_ shedlock.HoldGranularity = (*Provider)(nil)
)

// NewProvider returns a provider on client. It sends nothing: the cluster is
// first asked at the first TryLock, so a service can start while etcd is down.
// A nil client, a nil option or a bad option's value is an error wrapping
// [shedlock.ErrInvalidOption].
func NewProvider(client *clientv3.Client, opts ...Option) (*Provider, error) {
	o := options{Options: kvstore.Options{Env: DefaultEnv}}
	if err := kvstore.Configure("shedlocketcd.NewProvider", client == nil, &o, opts); err != nil {
		return nil, err
	}
	p := &Provider{
		client: client,
		keys:   kvstore.NewSpace(KeyPrefix, o.Env),
		owner:  kvstore.NewOwner(o.LockedBy, '#', '.'),
		now:    time.Now,
	}
	p.minTTL.Store(defaultMinTTL)
	return p, nil
}

// defaultMinTTL is etcd's minimum lease TTL at its defaults, in seconds: 1.5
// election timeouts of 1s, rounded up. A cluster with a longer one shows it in
// the answer to a grant of less (ProbeMinTTL): the provider then uses that.
const defaultMinTTL = 2

// HoldGranularity reports how the provider keeps a hold: leases of whole
// seconds, at least the cluster's minimum TTL, 2s at etcd's defaults.
// shedlock.Schedule asks it so that each run's hold ends before the next fire
// time. The first call learns the cluster's minimum, as ProbeMinTTL does,
// within probeTimeout; one that cannot reach the cluster assumes 2s, and a
// later call asks again (no more often than probeRetry), as does each grant
// that shows a longer minimum.
func (p *Provider) HoldGranularity() (step, min time.Duration) {
	p.probe.once(p)
	return time.Second, p.minTTLDuration()
}

// minTTLDuration is the cluster's minimum lease TTL as the provider knows it.
func (p *Provider) minTTLDuration() time.Duration {
	return time.Duration(p.minTTL.Load()) * time.Second
}

// raiseMinTTL records a minimum lease TTL of ttl seconds, if longer than the
// one known: a cluster's grants never show it shorter than it is.
func (p *Provider) raiseMinTTL(ttl int64) {
	for m := p.minTTL.Load(); ttl > m; m = p.minTTL.Load() {
		if p.minTTL.CompareAndSwap(m, ttl) {
			return
		}
	}
}

// LockedBy returns the owner this provider writes into lock values.
func (p *Provider) LockedBy() string { return p.owner.LockedBy() }

// Key returns the etcd key of the lock named name.
func (p *Provider) Key(name string) string { return p.keys.Key(name) }

// CheckConfig reports whether cfg is valid; it touches no server.
func (p *Provider) CheckConfig(cfg shedlock.LockConfig) error { return cfg.Validate() }

// TryLock makes one attempt to take cfg's lock: it grants a lease of
// LockAtMostFor (whole seconds, rounded up, and at least the cluster's minimum
// TTL) and sends one transaction that puts the key, attached to the lease,
// only if the key is absent; ErrNotAcquired when it is present, and the lease
// is revoked. With a LockAtLeastFor, a second lease of that length is granted
// at the same time, for Unlock to move the key to. The lock's fencing token is
// the revision of the put. The same transaction refuses a name an operator
// paused (Pause) with an error wrapping shedlock.ErrPaused: it compares the
// paused key too, no request more. An invalid cfg is an error wrapping
// shedlock.ErrInvalidConfig, before any request. A failed request is returned
// as an error, never as a lock.
func (p *Provider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return p.TryLockChecked(ctx, cfg, lockcfg.Checked{})
}

// TryLockChecked is TryLock on a config the executor has validated
// (lockcfg.Checked, which only this repository's modules can name).
func (p *Provider) TryLockChecked(ctx context.Context, cfg shedlock.LockConfig, _ lockcfg.Checked) (shedlock.Lock, error) {
	l, err := p.acquire(ctx, cfg, p.takeUnpaused(ctx, cfg.Name))
	if err != nil {
		return nil, err
	}
	return l, nil
}

// take sends the one transaction that puts a lock's key (put, attached to its
// lease) if the lock is free: its answer, and whether the put was made.
type take func(key string, put clientv3.Op) (resp *clientv3.TxnResponse, took bool, err error)

// acquire grants the leases of cfg's lock and sends take; ErrNotAcquired when
// take made no put, and the leases are revoked.
func (p *Provider) acquire(ctx context.Context, cfg shedlock.LockConfig, take take) (*lock, error) {
	l := &lock{p: p, name: cfg.Name, key: p.Key(cfg.Name), value: p.owner.Value(p.now()), askedLeast: cfg.LockAtLeastFor}
	sent := time.Now()
	var least chan grant
	if cfg.LockAtLeastFor > 0 {
		least = make(chan grant, 1)
		go func() { least <- p.grant(ctx, cfg.LockAtLeastFor) }()
	}
	most := p.grant(ctx, cfg.LockAtMostFor)
	if least != nil {
		g := <-least
		l.least = g
		if g.err != nil && most.err == nil {
			p.revoke(ctx, most.id)
			most.err = g.err
		}
		if most.err != nil && g.err == nil {
			p.revoke(ctx, g.id)
		}
	}
	if most.err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: grant a lease: %w", cfg.Name, most.err)
	}
	l.most = most
	resp, took, err := take(l.key, clientv3.OpPut(l.key, l.value, clientv3.WithLease(most.id)))
	if err != nil || !took {
		// The put may have been made even when the reply was lost: revoking
		// the lease then deletes this key, which is ours, and no other.
		l.revokeLeases(ctx)
		if err != nil {
			return nil, fmt.Errorf("shedlock: acquire %q: %w", cfg.Name, err)
		}
		return nil, shedlock.ErrNotAcquired
	}
	l.fence = resp.Header.Revision
	l.acquired = time.Now()
	l.ends = sent.Add(cfg.LockAtMostFor)
	return l, nil
}

// grant is a lease granted to one lock: its ID, its TTL as the cluster set it,
// and when its grant was answered, on this process's monotonic clock.
type grant struct {
	id  clientv3.LeaseID
	ttl time.Duration
	got time.Time
	err error
}

// grant asks for a lease of d, in whole seconds rounded up: the cluster may
// raise it to its minimum TTL, and says so in its answer.
func (p *Provider) grant(ctx context.Context, d time.Duration) grant {
	asked := TTLSeconds(d)
	resp, err := p.client.Grant(ctx, asked)
	if err != nil {
		return grant{err: err}
	}
	if resp.TTL > asked {
		p.raiseMinTTL(resp.TTL)
	}
	return grant{id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second, got: time.Now()}
}

// revoke revokes a lease, if ctx still allows: a lease left behind ends
// by itself at its TTL, and holds no key that is not ours.
func (p *Provider) revoke(ctx context.Context, id clientv3.LeaseID) {
	if id == clientv3.NoLease || ctx.Err() != nil {
		return
	}
	_, _ = p.client.Revoke(ctx, id)
}

// revokeAt revokes lease id at end, on this process's clock: a hold kept on
// its lease after a release ends there, even when a new cluster leader has
// given the lease its whole TTL again (it does so for every lease), which
// would otherwise keep the key past the hold, and a Schedule'd job past its
// next fire time. end counts from when the acquisition was answered, after
// the cluster made the put: never early. A holder that dies first leaves the
// lease to its TTL.
func (p *Provider) revokeAt(id clientv3.LeaseID, end time.Time) {
	if id == clientv3.NoLease {
		return
	}
	time.AfterFunc(time.Until(end), func() {
		ctx, cancel := context.WithTimeout(context.Background(), holdRevokeTimeout)
		defer cancel()
		_, _ = p.client.Revoke(ctx, id)
	})
}

// holdRevokeTimeout bounds revokeAt's request: one that gets no answer
// leaves the lease to its TTL, as before.
const holdRevokeTimeout = 10 * time.Second

// TTLSeconds returns the lease TTL the provider asks for a duration d: whole
// seconds, rounded up, at least 1. The cluster raises a TTL below its minimum
// (1.5 election timeouts, rounded up to the second: 2s at etcd's defaults).
func TTLSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 || s == 0 {
		s++
	}
	return s
}

// errLeaseNotFound reports whether err is the cluster's answer for a lease
// that has expired or been revoked.
func errLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound)
}
