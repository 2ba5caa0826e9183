package shedlock

import (
	"context"
	"errors"
	"time"
)

// keepAliveInterval is how long keep-alive waits after an extension before the
// next one: a third of LockAtMostFor, so that a lock taken away is noticed within
// about a third of it, and a failed Extend leaves two thirds for retries.
func keepAliveInterval(mostFor time.Duration) time.Duration {
	return max(mostFor/3, time.Millisecond)
}

// keepAliveRetry is the first wait after a failed Extend; it doubles with each
// failure, up to the interval.
func keepAliveRetry(mostFor time.Duration) time.Duration {
	return max(keepAliveInterval(mostFor)/10, time.Millisecond)
}

// startKeepAlive extends the lock in the background until finish. Its Extends
// run on a context of their own, carrying the caller's values but not its
// cancellation: the lock must be kept while the task runs, even a task that has
// been told to stop and is finishing.
func (l *lease) startKeepAlive() {
	ctx, stop := context.WithCancel(context.WithoutCancel(l.parent))
	l.keepAliveStop, l.keepAliveDone = stop, make(chan struct{})
	go l.keepAliveLoop(ctx)
}

func (l *lease) keepAliveLoop(ctx context.Context) {
	defer close(l.keepAliveDone)
	l.mu.Lock()
	wait, retry := keepAliveInterval(l.most), keepAliveRetry(l.most)
	l.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		most, least, deadline := l.most, l.least, l.deadline
		l.mu.Unlock()
		attemptCtx, cancel := context.WithDeadline(ctx, attemptDeadline(time.Now(), deadline))
		err := l.extend(attemptCtx, most, least, true)
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			wait, retry = keepAliveInterval(l.most), keepAliveRetry(l.most)
			l.mu.Unlock()
		case errors.Is(err, ErrLockLost) || l.lostCause() != nil || ctx.Err() != nil:
			return
		default:
			l.hooks.log.WarnContext(l.parent, "shedlock: keep-alive could not extend the lock; retrying while it has time",
				"lock", l.cfg.Name, "retry_in", retry, "error", err)
			wait = retry
			retry = min(2*retry, keepAliveInterval(most))
		}
		t.Reset(wait)
	}
}

// attemptDeadline bounds one Extend to half the time the lock has left
// (at least keepAliveMinAttempt), so that an Extend hung on a connection that
// died silently is abandoned while there is time to retry on another.
func attemptDeadline(now, deadline time.Time) time.Time {
	if d := now.Add(max(deadline.Sub(now)/2, keepAliveMinAttempt)); d.Before(deadline) {
		return d
	}
	return deadline
}

// keepAliveMinAttempt is the least time one Extend is given.
const keepAliveMinAttempt = 50 * time.Millisecond
