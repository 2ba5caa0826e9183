package shedlocketcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
)

// lock is one acquisition. Its mutex orders its own Unlock and Extend, so an
// Extend can never revive a lock that an Unlock has let go.
type lock struct {
	p     *Provider
	name  string
	key   string
	value string // unique to this acquisition, for people reading the key
	fence int64  // the revision that created the key

	mu         sync.Mutex
	modRev     int64         // the key's revision as this lock last wrote it: every guard compares it
	most       grant         // the lease the key is attached to
	least      grant         // the lease of LockAtLeastFor, counted from the acquisition; none if 0
	askedLeast time.Duration // LockAtLeastFor as asked
	acquired   time.Time     // when the acquiring transaction was answered: after the cluster made the put
	done       bool          // released, or found lost
	ends       time.Time     // LockAtMostFor as asked, from when the last grant was sent, on this process's clock
}

// Unlock releases the lock, keeping it until LockAtLeastFor after it was
// taken: one transaction that, only while the key's revision is still the one
// this lock last wrote, deletes the key, or moves it to the lease of
// LockAtLeastFor granted at the acquisition (so that the cluster's clock
// counts it) while that lease may still run; then the lease of LockAtMostFor
// is revoked. ErrLockLost when the key is no longer this acquisition's (or
// Unlock already ran); an error wrapping ErrReleaseFailed when the
// transaction could not run, and the lock stays until its lease ends.
func (l *lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unlock(ctx)
}

// unlock is Unlock, l.mu held; also are sent in the releasing transaction's
// success branch, beside the key's delete or move (UnlockSucceeded's record).
func (l *lock) unlock(ctx context.Context, also ...clientv3.Op) error {
	if l.done {
		return shedlock.ErrLockLost
	}
	// The lease of LockAtLeastFor began before its grant was answered: once
	// its TTL has passed since then, it has surely ended.
	keep := l.least.id != clientv3.NoLease && time.Since(l.least.got) < l.least.ttl
	resp, err := l.release(ctx, keep, also)
	if keep && errLeaseNotFound(err) {
		resp, err = l.release(ctx, false, also)
	}
	if err != nil {
		return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, err)
	}
	l.done = true
	l.p.revoke(ctx, l.most.id)
	if !resp.Succeeded {
		return shedlock.ErrLockLost
	}
	return nil
}

// release sends the guarded transaction of Unlock: keep moves the key to the
// lease of LockAtLeastFor, else it is deleted; also follow in the same branch.
func (l *lock) release(ctx context.Context, keep bool, also []clientv3.Op) (*clientv3.TxnResponse, error) {
	op := clientv3.OpDelete(l.key)
	if keep {
		op = clientv3.OpPut(l.key, l.value, clientv3.WithLease(l.least.id))
	}
	return l.p.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(l.key), "=", l.modRev)).
		Then(append([]clientv3.Op{op}, also...)...).
		Commit()
}

// Extend grants a lease of lockAtMostFor and moves the key to it, in one
// transaction guarded by the key's revision, then revokes the lease it had;
// ErrLockLost when the key is no longer this acquisition's, or when
// LockAtMostFor as asked has passed on this process's clock since the last
// grant was sent (the cluster's lease, rounded up to the second, may still
// run: it is not relied on). lockAtLeastFor replaces LockAtLeastFor, still
// counted from the acquisition: a changed one is a new lease, its TTL what is
// left of it since the acquisition was answered on this process's clock,
// which is after the cluster made the put: the lock is kept no shorter.
func (l *lock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	cfg := shedlock.LockConfig{Name: l.name, LockAtMostFor: lockAtMostFor, LockAtLeastFor: lockAtLeastFor}
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return shedlock.ErrLockLost
	}
	if !time.Now().Before(l.ends) {
		l.done = true
		return shedlock.ErrLockLost
	}
	sent := time.Now()
	most := l.p.grant(ctx, lockAtMostFor)
	if most.err != nil {
		return fmt.Errorf("shedlock: extend %q: grant a lease: %w", l.name, most.err)
	}
	resp, err := l.p.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(l.key), "=", l.modRev)).
		Then(clientv3.OpPut(l.key, l.value, clientv3.WithLease(most.id))).
		Commit()
	if err != nil {
		l.p.revoke(ctx, most.id)
		return fmt.Errorf("shedlock: extend %q: %w", l.name, err)
	}
	if !resp.Succeeded {
		l.p.revoke(ctx, most.id)
		l.done = true
		return shedlock.ErrLockLost
	}
	l.p.revoke(ctx, l.most.id)
	l.modRev = resp.Header.Revision
	l.most = most
	l.ends = sent.Add(lockAtMostFor)
	if lockAtLeastFor != l.askedLeast {
		l.setLeast(ctx, lockAtLeastFor)
	}
	return nil
}

// setLeast replaces the lease of LockAtLeastFor with one that ends
// lockAtLeastFor after the acquisition was answered, or with none when that
// has passed. A lease that cannot be granted leaves none: Unlock then frees
// the lock at once.
func (l *lock) setLeast(ctx context.Context, lockAtLeastFor time.Duration) {
	old := l.least.id
	l.askedLeast = lockAtLeastFor
	l.least = grant{}
	if left := lockAtLeastFor - time.Since(l.acquired); left > 0 {
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

// Fence returns the acquisition's fencing token, the revision at which its
// key was created: the cluster's revision grows with every write, so a later
// acquisition of any name, by any pod, has a larger one. Extend keeps it.
func (l *lock) Fence() (fence int64, ok bool) { return l.fence, true }

// CheckHeld reports, without asking etcd, whether the lock can still be
// relied on: nil until it is released, found lost, or past LockAtMostFor as
// asked, counted from when its last lease was asked for. A key deleted behind
// its back (a forced unlock) is found only by the next Extend or Unlock.
func (l *lock) CheckHeld() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.done:
		return fmt.Errorf("%w: lock %q: released or found lost", shedlock.ErrLockLost, l.name)
	case !time.Now().Before(l.ends):
		return fmt.Errorf("%w: lock %q", shedlock.ErrLockExpired, l.name)
	}
	return nil
}
