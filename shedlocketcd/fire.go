package shedlocketcd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
)

var _ shedlock.FireLocker = (*Provider)(nil)

// FiredPrefix begins every fired key, shedlock-fired:<env>:<name>, where
// CatchUp records the last fire time whose run of a lock succeeded. No lock's
// key (shedlock:<env>:<name>) has that form, so Locks never lists one.
const FiredPrefix = "shedlock-fired"

// firedWidth is the number of digits of a fired key's value: milliseconds
// since 1970, zero-padded so that etcd's comparison of values, byte by byte,
// orders them as times. Nineteen digits hold every int64.
const firedWidth = 19

// FiredKey returns the key where CatchUp records the last fire time whose
// run of the lock named name succeeded: shedlock-fired:<env>:<name>, its value
// the time in milliseconds since 1970, zero-padded to 19 digits. It has no
// lease: it outlives the locks.
func (p *Provider) FiredKey(name string) string { return FiredPrefix + p.envPart() + name }

// encodeFire returns fire's value in a fired key.
func encodeFire(name string, fire time.Time) (string, error) {
	ms := fire.UnixMilli()
	if ms < 0 {
		return "", fmt.Errorf("%w: lock %q: fire time %v is before 1970", shedlock.ErrInvalidConfig, name, fire)
	}
	return fmt.Sprintf("%0*d", firedWidth, ms), nil
}

// fireLock is a lock taken by TryLockFire, for one fire time.
type fireLock struct {
	*lock
	fired string // the fired key
	fire  string // the fire time, as the fired key holds it
}

// Own is the lock the fire lock wraps (see kvstore.Owned).
func (l *fireLock) Own() *lock {
	if l == nil {
		return nil
	}
	return l.lock
}

// TryLockFire takes cfg's lock for the run of fire time fire, as TryLock
// does, only if the lock's fired key (FiredKey) records an older fire time,
// or is absent, and the name is not paused (shedlock.ErrPaused): the
// conditions are compared in the one transaction that puts the lock's key. A
// transaction's comparisons are all required, and one on the value of an
// absent key never holds, so each older-value case is a transaction nested in
// a branch of the absent case's (see whenUnpaused): still one request. See
// shedlock.FireLocker and shedlock.CatchUp.
func (p *Provider) TryLockFire(ctx context.Context, cfg shedlock.LockConfig, fire time.Time) (shedlock.FireLock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	enc, err := encodeFire(cfg.Name, fire)
	if err != nil {
		return nil, err
	}
	fired := p.FiredKey(cfg.Name)
	l, err := p.acquire(ctx, cfg, func(key string, put clientv3.Op) (*clientv3.TxnResponse, bool, error) {
		now := time.Now()
		free := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		older := clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Version(fired), "=", 0)},
			[]clientv3.Op{put},
			[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(fired), "<", enc)}, []clientv3.Op{put}, nil)})
		cmps, then, els := whenUnpaused(p.PausedKey(cfg.Name), now, []clientv3.Cmp{free}, older)
		resp, err := p.client.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
		return answer(resp, err, now)
	})
	if err != nil {
		return nil, err
	}
	return &fireLock{lock: l, fired: fired, fire: enc}, nil
}

// UnlockSucceeded releases the lock as Unlock does, keeping it until leastFor
// after it was taken, and records its fire time in the fired key unless a
// later one is, in the one releasing transaction: the record is a transaction
// nested in its success branch (put when the fired key is absent, else when
// its value is older), beside the key's delete or move. A leastFor other than
// the lock's LockAtLeastFor is a lease granted first for what is left of it
// since the acquisition, rounded down to the second, and none when that is
// below the cluster's minimum TTL: the hold never outlasts leastFor, which
// shedlock.Schedule sets to end the skew bound before the next fire time.
// The fired key, not the hold, keeps a fire time to one run.
func (l *fireLock) UnlockSucceeded(ctx context.Context, leastFor time.Duration) error {
	leastFor = max(leastFor, 0) // as Unlock's LockAtLeastFor: none
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	if leastFor != l.askedLeast {
		l.setLeast(ctx, leastFor, true)
	}
	put := clientv3.OpPut(l.fired, l.fire)
	record := clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Version(l.fired), "=", 0)},
		[]clientv3.Op{put},
		[]clientv3.Op{clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(l.fired), "<", l.fire)},
			[]clientv3.Op{put}, nil)})
	return l.unlock(ctx, record)
}

// LastFire returns the fire time recorded in the fired key of name's lock;
// ok is false when the key is absent.
func (p *Provider) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	resp, err := p.client.Get(ctx, p.FiredKey(name))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("shedlock: read the last fire time of %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return time.Time{}, false, nil
	}
	v := string(resp.Kvs[0].Value)
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || len(v) != firedWidth || ms < 0 {
		return time.Time{}, false, fmt.Errorf("shedlock: the fired key of %q holds %q, not milliseconds since 1970 in %d digits",
			name, v, firedWidth)
	}
	return time.UnixMilli(ms), true, nil
}
