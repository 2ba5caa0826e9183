package shedlock

import (
	"context"
	"errors"
	"fmt"
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
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held != nil {
		if err = held.Unlock(ctx); errors.Is(err, ErrLockLost) {
			err = nil // taken by another since: nothing of ours to free
		}
		if err != nil {
			l.opts.log.WarnContext(ctx, "shedlock: leader could not release its lease; it stays until its end",
				"leader", l.cfg.Name, "error", err)
			err = fmt.Errorf("shedlock: leader %q: release: %w", l.cfg.Name, err)
			if ctx.Err() != nil {
				return false, err // a later Stop may release it yet
			}
		}
		l.mu.Lock()
		l.held = nil
		l.mu.Unlock()
	}
	l.events.Wait(ctx)
	return true, errors.Join(l.drain.lost, err)
}

// leaderStopped is the cause of a leadership's context that Stop ended: it
// is ErrStopped for errors.Is, and names the leader.
type leaderStopped struct{ name string }

func (e leaderStopped) Error() string { return fmt.Sprintf("shedlock: leader %q stopped", e.name) }

func (leaderStopped) Is(target error) bool { return target == ErrStopped }
