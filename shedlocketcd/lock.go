package shedlocketcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/internal/retry"
)

// lock is one acquisition. Its hold orders its own Unlock and Extend, so an
// Extend can never revive a lock that an Unlock has let go; the fields below
// hold are read and written only within it.
type lock struct {
	p     *Provider
	name  string
	key   string
	value string // unique to this acquisition: with fence, every guard compares it
	fence int64  // the revision that created the key

	hold       kvstore.Hold
	most       grant              // the lease the key was last put on by a write whose answer came
	maybe      []clientv3.LeaseID // leases the key may be on: put there by writes whose answer was lost
	maybeEnds  time.Time          // the latest end such a write asked for, on this process's clock
	maybeFirst time.Time          // the earliest end such a write asked for: CheckHeld counts to it
	least      grant              // the lease of LockAtLeastFor, counted from the acquisition; none if 0
	askedLeast time.Duration      // LockAtLeastFor as asked
	acquired   time.Time          // when the acquiring transaction was answered: after the cluster made the put
	ends       time.Time          // LockAtMostFor as asked, from when the last grant was sent, on this process's clock
}

// ours is the guard of every write after the acquisition: the key is still
// this acquisition's, whatever this lock wrote to it since. Both survive a
// write of this lock whose answer was lost, so the next write finds the key
// as it is; a key deleted and taken again has another creation revision, and
// one overwritten by another pod (Java's release puts over any holder) has
// another value.
func (l *lock) ours() []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.fence),
		clientv3.Compare(clientv3.Value(l.key), "=", l.value),
	}
}

// Unlock releases the lock, keeping it until LockAtLeastFor after it was
// taken: one transaction that, only while the key is still this
// acquisition's, deletes the key, or, while LockAtLeastFor has not passed
// since the acquisition, moves it to the lease of LockAtLeastFor granted then
// (so that the cluster's clock counts it); then the leases of LockAtMostFor
// are revoked. A failed transaction is sent again, up to releaseRetries
// times, while ctx allows: it is idempotent. ErrLockLost when the key is no
// longer this acquisition's (or Unlock already ran); an error wrapping
// ErrReleaseFailed when no try was answered, and the lock stays until its
// lease ends.
func (l *lock) Unlock(ctx context.Context) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	return l.unlock(ctx)
}

// Release retries: how often a failed release is sent again, and the wait
// before the first retry, doubled each time, as the SQL stores' defaults.
const (
	releaseRetries = 3
	releaseBackoff = 100 * time.Millisecond
)

// unlock is Unlock, within the hold; also are sent in the releasing
// transaction's success branch, beside the key's delete or move
// (UnlockSucceeded's record).
func (l *lock) unlock(ctx context.Context, also ...clientv3.Op) error {
	// The lease of LockAtLeastFor began before the acquisition: once
	// LockAtLeastFor has passed since the acquisition was answered, the key
	// is deleted, not left on a lease that a rounded TTL keeps longer.
	keep := l.least.id != clientv3.NoLease && time.Since(l.acquired) < l.askedLeast &&
		time.Since(l.least.got) < l.least.ttl
	var resp *clientv3.TxnResponse
	unknown := false // a try was sent and not answered: it may have been applied
	err := retry.Do(ctx, releaseRetries, releaseBackoff, func() error {
		var err error
		resp, err = l.release(ctx, keep, also)
		if keep && errLeaseNotFound(err) {
			keep = false
			resp, err = l.release(ctx, false, also)
		}
		unknown = unknown || err != nil
		return err
	}, nil)
	if err != nil {
		return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, err)
	}
	l.hold.Finish()
	// The key is on none of these leases now: deleted, moved to the lease of
	// LockAtLeastFor, or another acquisition's.
	l.revokeMost(ctx)
	if resp.Succeeded {
		if keep {
			l.p.revokeAt(l.least.id, l.acquired.Add(l.askedLeast))
		}
		return nil
	}
	// A try whose answer was lost may have deleted the key: found absent, it
	// was released by that try, or ran out meanwhile; either way it is free.
	if unknown && !keep && len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().GetKvs()) == 0 {
		return nil
	}
	return shedlock.ErrLockLost
}

// release sends the guarded transaction of Unlock: keep moves the key to the
// lease of LockAtLeastFor, else it is deleted; also follow in the same branch.
// When the key is not this acquisition's, it is read.
func (l *lock) release(ctx context.Context, keep bool, also []clientv3.Op) (*clientv3.TxnResponse, error) {
	op := clientv3.OpDelete(l.key)
	if keep {
		op = clientv3.OpPut(l.key, l.value, clientv3.WithLease(l.least.id))
	}
	return l.p.client.Txn(ctx).
		If(l.ours()...).
		Then(append([]clientv3.Op{op}, also...)...).
		Else(clientv3.OpGet(l.key, clientv3.WithKeysOnly())).
		Commit()
}

// revokeMost revokes the leases of LockAtMostFor the key may have been on,
// once a guarded write has moved or deleted it, or found it another's.
func (l *lock) revokeMost(ctx context.Context) {
	l.p.revoke(ctx, l.most.id)
	for _, id := range l.maybe {
		l.p.revoke(ctx, id)
	}
	l.maybe = nil
}

// Extend grants a lease of lockAtMostFor and moves the key to it, in one
// transaction guarded as Unlock's, then revokes the leases it was on;
// ErrLockLost when the key is no longer this acquisition's, or when
// LockAtMostFor as asked has passed on this process's clock since the last
// grant was sent (the cluster's lease, rounded up to the second, may still
// run: it is not relied on). A transaction whose answer is lost may have
// moved the key: no lease is revoked then, and the next Extend or Unlock,
// guarded by what such a move does not change, finds the key all the same,
// within the LockAtMostFor that lost Extend asked for.
// lockAtLeastFor replaces LockAtLeastFor, still counted from the
// acquisition: a changed one is a new lease, its TTL what is left of it since
// the acquisition was answered on this process's clock, which is after the
// cluster made the put: the lock is kept no shorter.
func (l *lock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	if err := lockcfg.Durations(l.name, lockAtMostFor, lockAtLeastFor); err != nil { // the name was checked by TryLock
		return err
	}
	return l.ExtendChecked(ctx, lockAtMostFor, lockAtLeastFor, lockcfg.Checked{})
}

// ExtendChecked is Extend on durations the executor has checked
// (lockcfg.Checked, which only this repository's modules can name).
func (l *lock) ExtendChecked(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration, _ lockcfg.Checked) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	// Past the end this lock last heard of, an Extend whose answer was lost
	// may still keep the key: the guarded write below tells.
	if now := time.Now(); !now.Before(l.ends) && !now.Before(l.maybeEnds) {
		l.hold.Finish()
		return shedlock.ErrLockLost
	}
	sent := time.Now()
	most := l.p.grant(ctx, lockAtMostFor)
	if most.err != nil {
		return fmt.Errorf("shedlock: extend %q: grant a lease: %w", l.name, most.err)
	}
	resp, err := l.p.client.Txn(ctx).
		If(l.ours()...).
		Then(clientv3.OpPut(l.key, l.value, clientv3.WithLease(most.id))).
		Commit()
	if err != nil {
		// The put may have been made: revoking its lease would delete the key
		// behind this holder's back. The lease ends by itself at its TTL.
		l.maybe = append(l.maybe, most.id)
		end := sent.Add(lockAtMostFor)
		if end.After(l.maybeEnds) {
			l.maybeEnds = end
		}
		if l.maybeFirst.IsZero() || end.Before(l.maybeFirst) {
			l.maybeFirst = end
		}
		return fmt.Errorf("shedlock: extend %q: %w", l.name, err)
	}
	if !resp.Succeeded {
		l.p.revoke(ctx, most.id)
		l.revokeMost(ctx)
		l.hold.Finish()
		return shedlock.ErrLockLost
	}
	l.revokeMost(ctx)
	l.most = most
	l.ends, l.maybeEnds, l.maybeFirst = sent.Add(lockAtMostFor), time.Time{}, time.Time{}
	if lockAtLeastFor != l.askedLeast {
		l.setLeast(ctx, lockAtLeastFor, false)
	}
	return nil
}

// setLeast replaces the lease of LockAtLeastFor with one that ends
// lockAtLeastFor after the acquisition was answered, or with none when that
// has passed. A lease that cannot be granted leaves none: Unlock then frees
// the lock at once. down rounds what is left down to whole seconds, and
// leaves none below the cluster's minimum TTL, so that the lease never ends
// after lockAtLeastFor; else it is rounded up, and never ends before.
func (l *lock) setLeast(ctx context.Context, lockAtLeastFor time.Duration, down bool) {
	old := l.least.id
	l.askedLeast = lockAtLeastFor
	l.least = grant{}
	left := lockAtLeastFor - time.Since(l.acquired)
	if down && left < l.p.minTTLDuration() {
		left = 0
	}
	if down {
		left = left.Truncate(time.Second)
	}
	if left > 0 {
		if g := l.p.grant(ctx, left); g.err == nil {
			l.least = g
		}
	}
	l.p.revoke(ctx, old)
}

// revokeLeases revokes both leases of an attempt that took no lock.
func (l *lock) revokeLeases(ctx context.Context) {
	l.p.revoke(ctx, l.most.id)
	l.p.revoke(ctx, l.least.id)
}

// Own is the lock itself (see kvstore.Owned).
func (l *lock) Own() *lock { return l }

// Fence returns the acquisition's fencing token, the revision at which its
// key was created: the cluster's revision grows with every write, so a later
// acquisition of any name, by any pod, has a larger one. Extend keeps it.
func (l *lock) Fence() (fence int64, ok bool) { return l.fence, true }

// CheckHeld reports, without asking etcd, whether the lock can still be
// relied on: nil until it is released, found lost, or past LockAtMostFor as
// asked, counted from when its last lease was asked for. After an Extend
// whose answer was lost, the key is on the lease it asked for or on the one
// before, and CheckHeld counts to the earlier of their ends: the lock may be
// another pod's from then (the next Extend or Unlock still finds the key on
// the later one). A key deleted behind its back (a forced unlock) is found
// only by the next Extend or Unlock.
func (l *lock) CheckHeld() error {
	return l.hold.Check(l.name, func() time.Time {
		if !l.maybeFirst.IsZero() && l.maybeFirst.Before(l.ends) {
			return l.maybeFirst
		}
		return l.ends
	})
}
