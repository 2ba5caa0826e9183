package shedlockk8s

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shedlock-go/shedlock"
)

// lock is one acquisition. Its mutex orders its own Unlock and Extend, so an
// Extend can never revive a lock that an Unlock has let go.
type lock struct {
	p           *Provider
	name        string // the lock's
	lease       string // its Lease's
	acquisition string // unique to this acquisition: AnnotationAcquisition and the holder while held
	fence       int64  // the resourceVersion of the acquiring write
	fenced      bool   // fence parsed: false for a resourceVersion that is not an integer
	acquired    time.Time

	mu         sync.Mutex
	cur        *coordinationv1.Lease // the version this lock last wrote, or found its own
	askedLeast time.Duration
	done       bool      // released, or found lost
	ends       time.Time // LockAtMostFor as asked, from when the last write whose answer came was sent
	maybeEnds  time.Time // the latest end a write whose answer was lost asked for
	maybeFirst time.Time // the earliest such end: CheckHeld counts to it
}

func newLock(p *Provider, cfg shedlock.LockConfig, lease, acq string, got *coordinationv1.Lease, sent time.Time) *lock {
	fence, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
	return &lock{
		p: p, name: cfg.Name, lease: lease, acquisition: acq,
		fence: fence, fenced: err == nil && fence > 0,
		acquired: time.Now(), cur: got, askedLeast: cfg.LockAtLeastFor,
		ends: sent.Add(cfg.LockAtMostFor),
	}
}

// maxOwnVersions bounds how many new versions of its own Lease a lock's
// write finds in a row before it gives up: each is a write of this lock whose
// answer was lost, so more than a few mean something else writes there.
const maxOwnVersions = 5

// Release retries: how often a release whose answer did not come is sent
// again, and the wait before the first retry, doubled each time, as the other
// stores do.
const (
	releaseRetries = 3
	releaseBackoff = 100 * time.Millisecond
)

// Unlock releases the lock, keeping it until LockAtLeastFor after it was
// taken: one update, guarded by the resourceVersion of this lock's last write,
// that clears the holder and leaves as the Lease's hold what is left of
// LockAtLeastFor since the acquisition's answer came (0: free at once). An
// update that found the Lease changed reads it: still this acquisition's and
// held (a write of this lock whose answer was lost), it is sent again on the
// new version; released by this acquisition (the release was applied and its
// answer lost, or it was sent twice), it is done; another's, ErrLockLost. An
// update without an answer is sent again, up to releaseRetries times, while
// ctx allows; then the error wraps ErrReleaseFailed, and the lock stays until
// its hold ends.
func (l *lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.release(ctx, l.askedLeast, nil)
}

// release is Unlock, l.mu held, keeping the lock until least after the
// acquisition; edit (if not nil) changes each version written too.
func (l *lock) release(ctx context.Context, least time.Duration, edit func(*coordinationv1.Lease)) error {
	if l.done {
		return shedlock.ErrLockLost
	}
	wait := releaseBackoff
	for attempt, found := 0, 0; ; {
		w := prepare(l.cur, l.lease, l.p.env, l.name)
		w.Spec.HolderIdentity = nil
		setHold(w, least-time.Since(l.acquired))
		if edit != nil {
			edit(w)
		}
		sent := time.Now()
		got, err := l.p.leases.Update(ctx, w, metav1.UpdateOptions{})
		if err == nil {
			l.done = true
			l.p.seen.wrote(l.lease, got.ResourceVersion, sent)
			return nil
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			own, gerr := l.p.ownVersion(ctx, l.name, l.lease, l.acquisition)
			if gerr == nil {
				if own == nil || stateOf(own).holder == "" {
					l.done = true
					return l.lostUnless(own != nil)
				}
				if found++; found <= maxOwnVersions {
					l.cur = own
					continue
				}
			}
			err = gerr
		}
		if apierrors.IsForbidden(err) {
			return l.p.requestError("update", l.name, err)
		}
		if attempt++; attempt > releaseRetries || ctx.Err() != nil {
			return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, err)
		}
		if sleep(ctx, wait) != nil {
			return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, err)
		}
		wait *= 2
	}
}

// lostUnless is nil when released, else ErrLockLost.
func (l *lock) lostUnless(released bool) error {
	if released {
		return nil
	}
	return shedlock.ErrLockLost
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Extend moves the lock's hold to lockAtMostFor from now: one update, guarded
// by the resourceVersion of this lock's last write, that writes the new hold
// (a new version, which every pod times afresh). An update that found the
// Lease changed reads it, and sends the update again on the new version when
// it is still this acquisition's and held (a write of this lock whose answer
// was lost); ErrLockLost when it is another's, or when LockAtMostFor as asked
// has passed since this lock's last write was sent, on this process's clock.
// An update without an answer may have been applied: the next Extend or
// Unlock finds the Lease all the same. lockAtLeastFor replaces
// LockAtLeastFor, still counted from the acquisition.
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
	if now := time.Now(); !now.Before(l.ends) && !now.Before(l.maybeEnds) {
		l.done = true
		return shedlock.ErrLockLost
	}
	for found := 0; ; found++ {
		w := prepare(l.cur, l.lease, l.p.env, l.name)
		setHolder(w, l.acquisition, false)
		setHold(w, lockAtMostFor)
		sent := time.Now()
		got, err := l.p.leases.Update(ctx, w, metav1.UpdateOptions{})
		if err == nil {
			l.cur, l.askedLeast = got, lockAtLeastFor
			l.ends, l.maybeEnds, l.maybeFirst = sent.Add(lockAtMostFor), time.Time{}, time.Time{}
			l.p.seen.wrote(l.lease, got.ResourceVersion, sent)
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) || found == maxOwnVersions {
			l.maybe(sent.Add(lockAtMostFor))
			return l.p.requestError("update", l.name, err)
		}
		own, err := l.p.ownVersion(ctx, l.name, l.lease, l.acquisition)
		if err != nil {
			return err
		}
		if own == nil || stateOf(own).holder != l.acquisition {
			l.done = true
			return shedlock.ErrLockLost
		}
		l.cur = own
	}
}

// maybe records the end asked by a write whose answer was lost.
func (l *lock) maybe(end time.Time) {
	if end.After(l.maybeEnds) {
		l.maybeEnds = end
	}
	if l.maybeFirst.IsZero() || end.Before(l.maybeFirst) {
		l.maybeFirst = end
	}
}

// Fence returns the acquisition's fencing token: the resourceVersion of the
// write that took the Lease. Extend keeps it. See the package doc for why a
// later acquisition's is larger; ok is false only for a resourceVersion that
// is not an integer, which no API server on etcd gives.
func (l *lock) Fence() (fence int64, ok bool) { return l.fence, l.fenced }

// CheckHeld reports, without asking the API server, whether the lock can
// still be relied on: nil until it is released, found lost, or past
// LockAtMostFor as asked, counted from when its last write whose answer came
// was sent (after an Extend whose answer was lost, from the earlier of the two
// ends the Lease may have). A Lease taken by force is found only by the next
// Extend or Unlock.
func (l *lock) CheckHeld() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.ends
	if !l.maybeFirst.IsZero() && l.maybeFirst.Before(end) {
		end = l.maybeFirst
	}
	switch {
	case l.done:
		return fmt.Errorf("%w: lock %q: released or found lost", shedlock.ErrLockLost, l.name)
	case !time.Now().Before(end):
		return fmt.Errorf("%w: lock %q", shedlock.ErrLockExpired, l.name)
	}
	return nil
}
