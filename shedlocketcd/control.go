package shedlocketcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
)

var (
	_ shedlock.Controller   = (*Provider)(nil)
	_ shedlock.RunRequester = (*Provider)(nil)
)

// PausedPrefix begins every paused key, shedlock-paused:<env>:<name>, and
// RunsPrefix every run-now key, shedlock-runs:<env>:<name>. No lock's key
// (shedlock:<env>:<name>) has either form, so Java ShedLock pods never meet
// them.
const (
	PausedPrefix = "shedlock-paused"
	RunsPrefix   = "shedlock-runs"
)

// PausedKey returns the key that holds the pause of the lock named name:
// shedlock-paused:<env>:<name>, its value the pause's end in milliseconds
// since 1970 in 19 digits (19 nines until Resume), on a lease that ends then
// for a pause until a time.
func (p *Provider) PausedKey(name string) string { return PausedPrefix + p.envPart() + name }

// RunsKey returns the key that counts the run-now requests of the lock named
// name: shedlock-runs:<env>:<name>, its value "<requests not yet run> <the
// fencing token of the acquisition that marked one run last>".
func (p *Provider) RunsKey(name string) string { return RunsPrefix + p.envPart() + name }

// envPart is ":<env>:", as the lock keys have it.
func (p *Provider) envPart() string { return p.Key("")[len(KeyPrefix):] }

// Pause refuses every attempt on name's lock, by every provider of this env,
// with an error wrapping shedlock.ErrPaused until until, or until Resume when
// until is zero: it puts name's paused key (PausedKey), which the acquiring
// transactions compare. A pause until a time ends at that time as the
// acquiring pod's clock tells it, to the millisecond; its key is on a lease of
// what is left until then (whole seconds, rounded up, at least the cluster's
// minimum TTL; none for a pause beyond etcd's longest lease, some 285 years),
// so that etcd deletes it afterwards. A lock held when it is
// paused is extended and released as before. A pause that has already ended
// is an error wrapping shedlock.ErrInvalidConfig. Java ShedLock pods do not
// read the pause.
func (p *Provider) Pause(ctx context.Context, name string, until time.Time) error {
	if err := validName(name); err != nil {
		return err
	}
	opts := []clientv3.OpOption{clientv3.WithPrevKV()}
	if !until.IsZero() {
		left := time.Until(until)
		if left <= 0 {
			return fmt.Errorf("%w: pause %q until %v: that time has passed", shedlock.ErrInvalidConfig, name, until)
		}
		if left >= maxPauseLease {
			// etcd refuses a lease this long; the key's value, which the
			// acquisitions compare, ends the pause all the same.
			return p.putPause(ctx, name, until, opts)
		}
		g := p.grant(ctx, left)
		if g.err != nil {
			return fmt.Errorf("shedlock: pause %q: grant a lease: %w", name, g.err)
		}
		opts = append(opts, clientv3.WithLease(g.id))
	}
	return p.putPause(ctx, name, until, opts)
}

// maxPauseLease bounds the lease of a paused key: etcd refuses a TTL above
// 9,000,000,000 seconds (its lease.MaxLeaseTTL), some 285 years.
const maxPauseLease = 9_000_000_000 * time.Second

// putPause puts name's paused key, ending until, and revokes the lease of the
// pause it replaces.
func (p *Provider) putPause(ctx context.Context, name string, until time.Time, opts []clientv3.OpOption) error {
	resp, err := p.client.Put(ctx, p.PausedKey(name), encodePauseEnd(until), opts...)
	if err != nil {
		// The put may have been made: its lease ends at until, as the pause.
		return fmt.Errorf("shedlock: pause %q: %w", name, err)
	}
	if prev := resp.PrevKv; prev != nil && prev.Lease != 0 {
		p.revoke(ctx, clientv3.LeaseID(prev.Lease)) // the replaced pause's, which holds nothing else
	}
	return nil
}

// Resume ends name's pause, deleting its paused key and revoking its lease;
// a name not paused is no error.
func (p *Provider) Resume(ctx context.Context, name string) error {
	resp, err := p.client.Delete(ctx, p.PausedKey(name), clientv3.WithPrevKV())
	if err != nil {
		return fmt.Errorf("shedlock: resume %q: %w", name, err)
	}
	for _, prev := range resp.PrevKvs {
		if prev.Lease != 0 {
			p.revoke(ctx, clientv3.LeaseID(prev.Lease))
		}
	}
	return nil
}

// RunNow adds one run-now request to name and returns how many are pending:
// a read of its RunsKey, then a transaction that writes one more only if the
// key was not written since, again until one was not.
func (p *Provider) RunNow(ctx context.Context, name string) (int64, error) {
	if err := validName(name); err != nil {
		return 0, err
	}
	key := p.RunsKey(name)
	for {
		runs, err := p.readRuns(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("shedlock: run %q now: %w", name, err)
		}
		more := runs
		more.n++
		resp, err := p.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", runs.rev)).
			Then(clientv3.OpPut(key, more.String())).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("shedlock: run %q now: %w", name, err)
		}
		if resp.Succeeded {
			return more.n, nil
		}
	}
}

// validName reports a name no lock can have, as TryLock would.
func validName(name string) error {
	return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}.Validate()
}
