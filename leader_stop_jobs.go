package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// drain is what Stop's renewals of the lease, while it waits for the jobs,
// have found so far; it outlasts a Stop whose ctx ended, for the next one.
type drain struct {
	tried   bool  // a renewal was sent while Stop waited
	lastErr error // the last renewal's failure, for the loss if time runs out
	lost    error // the lease was lost while Stop waited: Stop's outcome says so
}

// waitJobs waits, within ctx, until no job run under the leadership
// (OnlyWhenLeading, EnterJob) runs. The leadership's context has ended, so
// the jobs wind down and no new one starts; meanwhile the lease is renewed
// as a term's is (Stop has ended the campaign that renewed it), so that no
// follower leads beside a job that winds down for longer than the lease. The
// renewals last as long as a Stop waits: once ctx ends they stop, and the
// lease runs out at its end in the store unless a later Stop takes them up
// again, so that a job that never returns does not keep the lease forever.
func (l *Leader) waitJobs(ctx context.Context) error {
	l.mu.Lock()
	if l.jobs == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.jobsOut == nil {
		l.jobsOut = make(chan struct{})
	}
	out, heldAt := l.jobsOut, l.heldAt
	l.mu.Unlock()
	renew := time.NewTimer(time.Until(heldAt.Add(l.opts.renew)))
	defer renew.Stop()
	tick := renew.C
	for {
		select {
		case <-out:
			return nil
		case <-ctx.Done():
			l.mu.Lock()
			n := l.jobs
			l.mu.Unlock()
			return fmt.Errorf("shedlock: leader %q: stop: %d jobs still running; the lease is no longer renewed and stays until its end: %w",
				l.cfg.Name, n, ctx.Err())
		case <-tick:
			if wait, more := l.renewHeld(ctx); more {
				renew.Reset(wait)
			} else {
				tick = nil
			}
		}
	}
}

// renewHeld extends the held lease once while Stop waits for the jobs, and
// returns how long to wait before the next renewal, or more false when there
// is nothing more to renew: no lease held, ctx ended, or the lease lost (in
// drain.lost). The caller holds stopTurn, and the campaign has ended.
func (l *Leader) renewHeld(ctx context.Context) (wait time.Duration, more bool) {
	l.mu.Lock()
	lock, heldAt := l.held, l.heldAt
	l.mu.Unlock()
	d := &l.drain
	if lock == nil || d.lost != nil {
		return 0, false
	}
	sent, until := time.Now(), lockEnd(heldAt, l.cfg.LockAtMostFor)
	if !sent.Before(until) {
		if d.tried { // else it lapsed before Stop came, which the term's context told
			d.lost = fmt.Errorf("%w: leader %q: the lease could not be renewed before its end while Stop waited for jobs",
				ErrLockLost, l.cfg.Name)
			if d.lastErr != nil {
				d.lost = fmt.Errorf("%w: %w", d.lost, d.lastErr)
			}
			l.warnLost(ctx, d.lost)
		}
		return 0, false
	}
	d.tried = true
	actx, cancel := context.WithDeadline(ctx, attemptDeadline(sent, until))
	err := lock.Extend(actx, l.cfg.LockAtMostFor, 0)
	cancel()
	switch {
	case err == nil:
		l.mu.Lock()
		l.heldAt = sent
		l.mu.Unlock()
		d.lastErr = nil
		return l.opts.renew, true
	case errors.Is(err, ErrLockLost):
		l.mu.Lock()
		l.held = nil // someone else's now: nothing to release
		l.mu.Unlock()
		d.lost = fmt.Errorf("shedlock: leader %q: the lease was lost while Stop waited for jobs: renewal refused: %w",
			l.cfg.Name, err)
		l.warnLost(ctx, d.lost)
		return 0, false
	case ctx.Err() != nil:
		return 0, false
	}
	d.lastErr = err
	wait = min(l.opts.retry, l.opts.renew)
	l.opts.log.WarnContext(ctx, "shedlock: leader could not renew its lease while Stop waits for jobs; retrying while it has time",
		"leader", l.cfg.Name, "retry_in", wait, "error", err)
	return wait, true
}

func (l *Leader) warnLost(ctx context.Context, err error) {
	l.opts.log.WarnContext(ctx, "shedlock: leader lost its lease while Stop waited for jobs; another may lead beside them",
		"leader", l.cfg.Name, "error", err)
}
