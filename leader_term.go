package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// term is one taking of the lease, from TryLock until the leadership's
// context ends: a hold that the campaign renews, with no task. What makes it
// a term rather than a run is only how it is reported: its number, token
// and start. The hold is the leadership's context.
type term struct {
	name   string // the leader's
	id     RunID
	hold   *hold
	fence  int64
	fenced bool
	begun  time.Time
}

// leaderLock is the term's lock as the leadership's context carries it: it
// gives the term's token and says whether the term lasts; the lease itself is
// the leader's to renew and release.
type leaderLock struct{ t *term }

func (ll leaderLock) Unlock(context.Context) error {
	return ll.refuse("the lease is released by Leader.Stop")
}

func (ll leaderLock) Extend(context.Context, time.Duration, time.Duration) error {
	return ll.refuse("the lease is renewed by the leader")
}

// refuse is the error of an Unlock or Extend, which the leader alone makes:
// errors.ErrUnsupported, as a task's lock refuses Unlock, and ErrLockLost
// too once the term has ended, as Extend's contract says of a lock no longer
// ours.
func (ll leaderLock) refuse(why string) error {
	err := fmt.Errorf("shedlock: leader %q: %s: %w", ll.t.name, why, errors.ErrUnsupported)
	if held := ll.CheckHeld(); held != nil {
		err = fmt.Errorf("%w; %w", err, held)
	}
	return err
}

// Fence returns the term's fencing token.
func (ll leaderLock) Fence() (int64, bool) { return ll.t.fence, ll.t.fenced }

// CheckHeld reports the term's end, as a loss of the lease; a term past its
// deadline has ended, whether or not the clock has fired yet.
func (ll leaderLock) CheckHeld() error {
	ll.t.hold.expireIfDue()
	if ll.t.hold.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: leader %q: the term has ended: %w", ErrLockLost, ll.t.name, context.Cause(ll.t.hold))
}

// leaderStopped is the cause of a leadership's context that Stop ended: it
// is ErrStopped for errors.Is, and names the leader.
type leaderStopped struct{ name string }

func (e leaderStopped) Error() string { return fmt.Sprintf("shedlock: leader %q stopped", e.name) }

func (leaderStopped) Is(target error) bool { return target == ErrStopped }

// extendLock is a lease's renewal: the leader's own, bounded by its caller.
func extendLock(ctx context.Context, lock Lock, most, least time.Duration) error {
	return lock.Extend(ctx, most, least)
}
