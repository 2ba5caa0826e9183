package shedlockk8s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/internal/retry"
)

// lock is one acquisition. Its Hold orders its own Unlock and Extend, so an
// Extend can never revive a lock that an Unlock has let go.
type lock struct {
	p           *Provider
	name        string // the lock's
	lease       string // its Lease's
	acquisition string // unique to this acquisition: AnnotationAcquisition and the holder while held
	fence       int64  // the resourceVersion of the acquiring write
	fenced      bool   // fence parsed: false for a resourceVersion that is not an integer
	acquired    time.Time

	hold       kvstore.Hold          // what follows is read and written between its Enter and Exit
	cur        *coordinationv1.Lease // the version this lock last wrote, or found its own
	askedLeast time.Duration
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
// held by it (a write of this lock whose answer was lost), it is sent again on
// the new version; released by this acquisition (the release was applied and
// its answer lost, or it was sent twice), it is done; another's, or held by
// another holder under this acquisition's annotations (a LeaderElector or a
// hand that wrote only the spec), ErrLockLost. An
// update without an answer is sent again, up to releaseRetries times, while
// ctx allows; then the error wraps ErrReleaseFailed, and the lock stays until
// its hold ends.
func (l *lock) Unlock(ctx context.Context) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	return l.release(ctx, l.askedLeast, nil)
}

// release is Unlock, between the Hold's Enter and Exit, keeping the lock
// until least after the acquisition; edit (if not nil) changes each version
// written too.
func (l *lock) release(ctx context.Context, least time.Duration, edit func(*coordinationv1.Lease)) error {
	var outcome error
	answered := false
	err := retry.Do(ctx, releaseRetries, releaseBackoff, func() error {
		res, err := l.releaseOnce(ctx, least, edit)
		if err == nil {
			answered, outcome = true, res
		}
		return err
	}, nil)
	if !answered {
		return fmt.Errorf("%w: lock %q: %w", shedlock.ErrReleaseFailed, l.name, err)
	}
	return outcome
}

// releaseOnce sends the release: its outcome (nil: released; ErrLockLost; a
// refusal by RBAC) once an answer tells it, else the error of a request that
// got none.
func (l *lock) releaseOnce(ctx context.Context, least time.Duration, edit func(*coordinationv1.Lease)) (outcome, err error) {
	for found := 0; ; found++ {
		w := prepare(l.cur, l.lease, l.p.env, l.name)
		w.Spec.HolderIdentity = nil
		setHold(w, least-time.Since(l.acquired))
		if edit != nil {
			edit(w)
		}
		sent := time.Now()
		got, err := l.p.leases.Update(ctx, w, metav1.UpdateOptions{})
		switch {
		case err == nil:
			l.hold.Finish()
			l.p.seen.wrote(l.lease, got.ResourceVersion, sent)
			return nil, nil
		case apierrors.IsForbidden(err):
			return l.p.requestError("update", l.name, err), nil
		case !apierrors.IsConflict(err) && !apierrors.IsNotFound(err):
			return nil, err
		}
		own, err := l.p.ownVersion(ctx, l.name, l.lease, l.acquisition)
		switch {
		case errors.Is(err, ErrForbidden):
			return err, nil
		case err != nil:
			return nil, err
		case own == nil:
			l.hold.Finish()
			return shedlock.ErrLockLost, nil
		case stateOf(own).holder == "":
			l.hold.Finish() // this acquisition's own release, applied
			return nil, nil
		case stateOf(own).holder != l.acquisition:
			l.hold.Finish() // another writer's holder on this acquisition's annotations
			return shedlock.ErrLockLost, nil
		case found == maxOwnVersions:
			return nil, fmt.Errorf("shedlock: lock %q: its Lease changed %d times under this lock's own writes", l.name, found)
		}
		l.cur = own
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
	return l.ExtendChecked(ctx, lockAtMostFor, lockAtLeastFor, lockcfg.Checked{})
}

// ExtendChecked is Extend on durations the executor has checked already.
func (l *lock) ExtendChecked(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration, _ lockcfg.Checked) error {
	if err := l.hold.Enter(); err != nil {
		return err
	}
	defer l.hold.Exit()
	if now := time.Now(); !now.Before(l.ends) && !now.Before(l.maybeEnds) {
		l.hold.Finish()
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
			l.hold.Finish()
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
	return l.hold.Check(l.name, func() time.Time {
		if !l.maybeFirst.IsZero() && l.maybeFirst.Before(l.ends) {
			return l.maybeFirst
		}
		return l.ends
	})
}
