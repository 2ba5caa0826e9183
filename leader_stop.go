package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Stop ends the campaign: the leadership's context ends with a cause
// wrapping ErrStopped, jobs run under the leadership (OnlyWhenLeading,
// EnterJob) are waited for while the lease is still renewed, then the lease
// is released, so that a follower leads within one retry period and no job of
// this instance runs beside its, however long the jobs take to wind down.
// It waits, within ctx, for the campaign and the jobs to end and for the
// listeners to receive the last events. It returns an error if ctx ends first
// (the lease is not released yet, and no longer renewed: a later Stop goes on
// with the shutdown and renews it again while it waits, and without one the
// lease stays until its end in the store), if the release fails, or if the
// lease was lost while Stop waited for the jobs (wrapping ErrLockLost: a
// follower may have led beside them). Every call, concurrent or later, waits
// for the same shutdown and returns its outcome.
//
// The renewals last as long as the jobs and ctx do: a job that ignores its
// context keeps the lease, and no instance leads, until ctx ends, so give ctx
// a deadline (the process's grace period on shutdown). A job that Stop waits
// for must not call Stop and wait for it: Stop waits for that very job, so
// the call blocks, holding the lease, until its ctx ends, and the lease is
// released only by a later Stop once the job has returned. Call Stop from
// outside the jobs (or from a goroutine the job does not wait for).
func (l *Leader) Stop(ctx context.Context) error {
	l.mu.Lock()
	first := !l.stopped
	l.stopped = true
	l.mu.Unlock()
	if first {
		l.stopLoop()
		l.endCurrent(l.stopCause) // before the release: no one acts past it
	}
	select { // one call at a time carries the shutdown on
	case l.stopTurn <- struct{}{}:
	case <-l.stopOut:
		return l.stopErr
	case <-ctx.Done():
		return fmt.Errorf("shedlock: leader %q: stop: another Stop is under way: %w", l.cfg.Name, ctx.Err())
	}
	defer func() { <-l.stopTurn }()
	select {
	case <-l.stopOut:
		return l.stopErr
	default:
	}
	final, err := l.shutdown(ctx)
	if final {
		l.stopErr = err
		close(l.stopOut)
	}
	return err
}

// shutdown carries Stop's steps on from where an earlier call left them;
// final is false when ctx ended before they were all done, so that a later
// Stop can finish them. The caller holds stopTurn.
func (l *Leader) shutdown(ctx context.Context) (final bool, err error) {
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started {
		select {
		case <-l.done:
		case <-ctx.Done():
			return false, fmt.Errorf("shedlock: leader %q: stop: the campaign did not end: %w", l.cfg.Name, ctx.Err())
		}
	}
	l.endCurrent(l.stopCause) // a term the campaign began as Stop came
	if err := l.waitJobs(ctx); err != nil {
		return false, err
	}
	err = l.release(ctx)
	if err != nil && ctx.Err() != nil {
		return false, err // a later Stop may release it yet
	}
	l.events.Wait(ctx)
	return true, errors.Join(l.lostInStop(), err)
}

// release frees the last taking's lease, unless a refused renewal found it
// another's.
func (l *Leader) release(ctx context.Context) error {
	l.mu.Lock()
	h := l.hold
	l.mu.Unlock()
	if h == nil {
		return nil
	}
	h.finish() // before the release: its end passing during it is no loss
	var err error
	if !h.gone() {
		if err = h.lock.Unlock(ctx); errors.Is(err, ErrLockLost) {
			err = nil // taken by another since: nothing of ours to free
		}
	}
	if err != nil {
		l.opts.log.WarnContext(ctx, "shedlock: leader could not release its lease; it stays until its end",
			"leader", l.cfg.Name, "error", err)
		return fmt.Errorf("shedlock: leader %q: release: %w", l.cfg.Name, err)
	}
	l.mu.Lock()
	l.hold = nil
	l.mu.Unlock()
	return nil
}

func (l *Leader) lostInStop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopLost
}

// waitJobs waits, within ctx, until no job run under the leadership
// (OnlyWhenLeading, EnterJob) runs. The leadership's context has ended, so
// the jobs wind down and no new one starts; meanwhile the hold is renewed as
// a term's is (Stop has ended the campaign that renewed it), so that no
// follower leads beside a job that winds down for longer than the lease. The
// renewals last as long as a Stop waits: once ctx ends they stop, and the
// lease runs out at its end unless a later Stop takes them up again, so that
// a job that never returns does not keep the lease forever. A loss meanwhile
// is Stop's outcome (holdEnded).
func (l *Leader) waitJobs(ctx context.Context) error {
	l.mu.Lock()
	if l.jobs == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.jobsOut == nil {
		l.jobsOut = make(chan struct{})
	}
	out, h := l.jobsOut, l.hold
	l.stopWaits = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.stopWaits = false
		l.mu.Unlock()
	}()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	t.Stop()
	var tick <-chan time.Time
	if h != nil && h.lostCause() == nil {
		t.Reset(time.Until(h.lastSent().Add(l.opts.renew)))
		tick = t.C
	}
	for {
		select {
		case <-out:
			return nil
		case <-ctx.Done():
			return l.jobsLeft(ctx)
		case <-tick:
			if wait := l.renew(ctx, h); h.lostCause() == nil {
				t.Reset(wait)
			} else {
				tick = nil
			}
		}
	}
}

// jobsLeft is waitJobs' error when ctx ended with jobs still running.
func (l *Leader) jobsLeft(ctx context.Context) error {
	l.mu.Lock()
	n := l.jobs
	l.mu.Unlock()
	return fmt.Errorf("shedlock: leader %q: stop: %d jobs still running; the lease is no longer renewed and stays until its end: %w",
		l.cfg.Name, n, ctx.Err())
}
