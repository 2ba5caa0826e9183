package shedlocketcd

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
)

// Locks returns every lock of the provider's env, by name: the keys
// shedlock:<env>:*, each with what is left of its lease by the cluster's
// clock, rounded up to the second, and every name paused or with run-now
// requests (its Control; see Pause and RunNow), held or not, all read in one
// request. A key exists only while held, and is held while it exists: etcd
// deletes it when its lease ends.
func (p *Provider) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	locks, paused, runs, err := p.readNames(ctx, "", true)
	if err != nil {
		return nil, fmt.Errorf("shedlock: list locks %s*: %w", p.Key(""), err)
	}
	return p.lockInfos(ctx, locks, paused, runs)
}

// Inspect returns the lock of exactly this name, with its Control;
// ErrLockNotFound when its key is absent (nobody holds it) and it is neither
// paused nor has run-now requests.
func (p *Provider) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	locks, paused, runs, err := p.readNames(ctx, name, false)
	if err != nil {
		return shedlock.LockInfo{}, fmt.Errorf("shedlock: read lock %q: %w", name, err)
	}
	infos, err := p.lockInfos(ctx, locks, paused, runs)
	if err != nil {
		return shedlock.LockInfo{}, err
	}
	if len(infos) == 0 {
		return shedlock.LockInfo{}, p.notFound(name)
	}
	return infos[0], nil
}

// ForceUnlock deletes the key of exactly this name whoever holds it, and
// returns the lock as it was just before; ErrLockNotFound when there is no
// key. The holder's next Unlock or Extend finds the key gone and
// returns ErrLockLost; its lease is left to end (it holds no other key). The
// caution of shedlock.Admin applies: only for a holder known to be dead.
func (p *Provider) ForceUnlock(ctx context.Context, name string) (shedlock.LockInfo, error) {
	resp, err := p.client.Delete(ctx, p.Key(name), clientv3.WithPrevKV())
	if err != nil {
		return shedlock.LockInfo{}, fmt.Errorf("shedlock: force unlock %q: %w", name, err)
	}
	if len(resp.PrevKvs) == 0 {
		return shedlock.LockInfo{}, p.notFound(name)
	}
	return p.info(ctx, resp.PrevKvs[0])
}

// ForceUnlockSeen deletes the key of seen.Name only while it holds the
// acquisition seen shows (the same LockedBy and LockedAt, read from its
// value), in a transaction guarded by the revision read: an acquisition taken
// since is an error wrapping ErrLockChanged, and nothing is deleted.
func (p *Provider) ForceUnlockSeen(ctx context.Context, seen shedlock.LockInfo) (shedlock.LockInfo, error) {
	for {
		kv, err := p.get(ctx, seen.Name)
		if err != nil {
			return shedlock.LockInfo{}, err
		}
		info, err := p.info(ctx, kv)
		if err != nil {
			return shedlock.LockInfo{}, err
		}
		if info.LockedBy != seen.LockedBy || !info.LockedAt.Equal(seen.LockedAt) {
			return info, fmt.Errorf("%w: lock %q is now held by %s", shedlock.ErrLockChanged, seen.Name, info.LockedBy)
		}
		resp, err := p.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).
			Commit()
		if err != nil {
			return shedlock.LockInfo{}, fmt.Errorf("shedlock: force unlock %q: %w", seen.Name, err)
		}
		if resp.Succeeded {
			return info, nil
		}
		// Written since it was read (an Extend, a release, another holder):
		// read it again.
	}
}

// HealthCheck sends a transaction that goes through the cluster's consensus
// like a lock's and changes nothing: its write is guarded by a comparison that
// never holds. It fails when no quorum answers.
func (p *Provider) HealthCheck(ctx context.Context) error {
	_, err := p.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(p.keys.Prefix()), "<", 0)).
		Then(clientv3.OpPut(p.keys.Prefix(), "")).
		Commit()
	if err != nil {
		return fmt.Errorf("shedlock: health check: %w", err)
	}
	return nil
}

// EnsureTable does nothing: etcd needs no table, a lock is a key.
func (p *Provider) EnsureTable(context.Context) error { return nil }

func (p *Provider) get(ctx context.Context, name string) (*mvccpb.KeyValue, error) {
	resp, err := p.client.Get(ctx, p.Key(name))
	if err != nil {
		return nil, fmt.Errorf("shedlock: read lock %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, p.notFound(name)
	}
	return resp.Kvs[0], nil
}

func (p *Provider) notFound(name string) error { return p.keys.NotFound(name) }

// info reads a lock's key: its value ADDED:<time>@<holder> (a value of
// another form is shown whole as the holder) and its lease's time left. A key
// that exists is held: etcd deletes it when its lease ends, and until then no
// instance can put it. The cluster reports the time left in whole seconds,
// rounded down (0 in the last second, -1 once the lease has ended and its key
// is about to go), so TimeLeft is that plus a second, and no more than the
// lease's TTL: never shorter than the lock is held. A key without a lease,
// put by hand, is held until deleted: TimeLeft -1.
func (p *Provider) info(ctx context.Context, kv *mvccpb.KeyValue) (shedlock.LockInfo, error) {
	name := p.keys.Name(string(kv.Key))
	info := ParseValue(string(kv.Value))
	info.Name = name
	info.Held = true
	if kv.Lease == 0 {
		info.TimeLeft = -1
		return info, nil
	}
	ttl, err := p.client.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return shedlock.LockInfo{}, fmt.Errorf("shedlock: read the lease of lock %q: %w", name, err)
	}
	left := max(ttl.TTL, 0) + 1
	if ttl.GrantedTTL > 0 {
		left = min(left, ttl.GrantedTTL)
	}
	info.TimeLeft = time.Duration(left) * time.Second
	info.LockUntil = time.Now().Add(info.TimeLeft).UTC().Truncate(time.Millisecond)
	return info, nil
}

// ParseValue reads a lock's value, ADDED:<time>@<holder>, as Java ShedLock
// and this package write it: LockedAt and LockedBy. A value of another form
// is the holder, whole.
func ParseValue(value string) shedlock.LockInfo {
	info := shedlock.LockInfo{LockedBy: value}
	if at, by, ok := kvstore.ParseValue(value); ok {
		info.LockedAt, info.LockedBy = at, by
	}
	return info
}
