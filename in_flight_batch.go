package shedlock

import (
	"context"
	"fmt"
	"time"
)

// await waits for the answer to a, for its caller's context to end, or for
// its own deadline: each attempt in a batch keeps its own acquire timeout. A
// caller that leaves is not answered: a lock its batch takes for it after is
// released (see answer).
func (as *attempts) await(a *attempt) (Lock, error) {
	t := time.NewTimer(time.Until(a.deadline))
	defer t.Stop()
	var cause error
	select {
	case r := <-a.answer:
		return r.Lock, r.Err
	case <-a.ctx.Done():
		cause = context.Cause(a.ctx)
	case <-t.C:
		cause = fmt.Errorf("no answer within the acquire timeout (%v): %w", as.timeout, context.DeadlineExceeded)
	}
	a.mu.Lock()
	select {
	case r := <-a.answer: // answered as it left
		a.mu.Unlock()
		return r.Lock, r.Err
	default:
	}
	a.gone = true
	b := a.batch
	a.mu.Unlock()
	if b != nil {
		b.leave()
	}
	return nil, fmt.Errorf("shedlock: lock %q: left its batch's attempt, still under way: %w", a.cfg.Name, cause)
}

// answer gives a its result, or, if its caller has left, releases the lock
// the result holds, so that no lock is held for a run that will not happen.
func (as *attempts) answer(a *attempt, r LockResult) {
	if as.deliver(a, r) {
		as.releaseLeft(a, r.Lock)
	}
}

// deliver gives a its result, unless its caller has left with a lock to
// release: then it reports true.
func (as *attempts) deliver(a *attempt, r LockResult) (release bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.gone {
		a.answer <- r // buffered: one answer per attempt
	}
	return a.gone && r.Lock != nil
}

// releaseLeft frees at once a lock taken for an attempt whose caller had
// left: no task ran under it, so nothing is to be kept for LockAtLeastFor,
// which Unlock would keep; the Extend before it drops that minimum hold. If
// it fails, the lock ends at its LockAtMostFor, as any lost release's.
func (as *attempts) releaseLeft(a *attempt, lock Lock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), as.timeout)
	defer cancel()
	done, err := as.inFlight().AcquireHeld(ctx)
	if err != nil {
		return
	}
	defer done()
	if a.cfg.LockAtLeastFor > 0 {
		if err := lock.Extend(ctx, a.cfg.LockAtMostFor, 0); err != nil {
			return // lost, or the store failed: it ends at its LockAtMostFor
		}
	}
	_ = lock.Unlock(ctx)
}

// sendBatch sends the attempts in one batch, those still in their window,
// within their acquire timeout and wanted, and answers each. The statement
// runs under a context of its own, until the latest of its members'
// deadlines or until every member has left (batchRun): one caller that gives
// up must not fail the others' attempts, nor bound them by its own deadline.
func (as *attempts) sendBatch(batch []*attempt) {
	now := time.Now()
	sent := batch[:0]
	cfgs := make([]LockConfig, 0, len(batch))
	var latest time.Time
	for _, a := range batch {
		switch {
		case !a.end.IsZero() && !now.Before(a.end):
			as.answer(a, LockResult{Err: errLate})
		case a.ctx.Err() != nil:
			as.answer(a, LockResult{Err: context.Cause(a.ctx)})
		case !now.Before(a.deadline):
			as.answer(a, LockResult{Err: fmt.Errorf("shedlock: lock %q: waited out the acquire timeout (%v): %w",
				a.cfg.Name, as.timeout, context.DeadlineExceeded)})
		default:
			sent = append(sent, a)
			cfgs = append(cfgs, a.cfg)
			if a.deadline.After(latest) {
				latest = a.deadline
			}
		}
	}
	if len(sent) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(sent[0].ctx), latest)
	defer cancel()
	b := &batchRun{cancel: cancel}
	b.members.Store(int32(len(sent)))
	for _, a := range sent {
		a.join(b)
	}
	if len(sent) == 1 {
		l, err := as.lockOne(ctx, sent[0].cfg)
		as.answer(sent[0], LockResult{Lock: l, Err: err})
		return
	}
	results, err := as.lockBatch(ctx, cfgs)
	if err == nil && len(results) != len(sent) {
		err = fmt.Errorf("shedlock: TryLockBatch returned %d results for %d attempts", len(results), len(sent))
	}
	var left []int // attempts whose callers left, with a lock to release after every answer
	for i, a := range sent {
		switch {
		case err != nil:
			as.answer(a, LockResult{Err: err})
		case results[i].Lock == nil && results[i].Err == nil:
			as.answer(a, LockResult{Err: fmt.Errorf("shedlock: lock %q: TryLockBatch returned neither a lock nor an error", a.cfg.Name)})
		case as.deliver(a, results[i]):
			left = append(left, i)
		}
	}
	for _, i := range left {
		as.releaseLeft(sent[i], results[i].Lock)
	}
}

// beginBatch counts a batch under way, from before its goroutine starts
// until its statement has answered and what it took for callers that left is
// released (endBatch).
func (as *attempts) beginBatch() {
	as.sendMu.Lock()
	defer as.sendMu.Unlock()
	if as.sending == 0 {
		as.sent = make(chan struct{})
	}
	as.sending++
}

func (as *attempts) endBatch() {
	as.sendMu.Lock()
	defer as.sendMu.Unlock()
	as.sending--
	if as.sending == 0 {
		close(as.sent)
	}
}

// waitBatches waits, within ctx, for the batches under way: a batch outlives
// the callers that left it, and may still take locks (which it then
// releases). Once every Run has returned no batch begins, so after Stop it
// waits for good.
func (as *attempts) waitBatches(ctx context.Context) error {
	as.sendMu.Lock()
	n, sent := as.sending, as.sent
	as.sendMu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-sent:
		return nil
	case <-ctx.Done():
	}
	as.sendMu.Lock()
	n = as.sending
	as.sendMu.Unlock()
	if n == 0 {
		return nil
	}
	return fmt.Errorf("shedlock: stop: %d batch statements of runs that gave up still in flight "+
		"(a lock they take is released when they answer): %w", n, ctx.Err())
}
