package shedlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// fireOutcome is what one attempt at a fire time came to.
type fireOutcome uint8

const (
	fireSucceeded fireOutcome = iota + 1 // the run succeeded here
	fireDone                             // the store records the fire time (or a later one) as succeeded
	fireOpen                             // failed, held elsewhere, or the store failed: check again
)

// outcomeOf reads an attempt's outcome from what run returned.
func outcomeOf(ran bool, err error) fireOutcome {
	if ran && err == nil {
		return fireSucceeded
	}
	return fireOpen
}

// catchUpJob is the catch-up side of a Schedule'd job (see CatchUp): what this
// instance knows of the job's latest fire time, and the goroutine that checks
// it at start and after each retry delay.
type catchUpJob struct {
	e        *Executor
	cfg      LockConfig
	loc      *time.Location
	schedule cron.Schedule // the entry's, once cron has parsed the spec
	runAt    func(fire time.Time, catchUp bool) (bool, error)
	fl       FireLocker
	window   time.Duration
	retry    time.Duration
	kick     chan struct{} // a fire's attempt changed the state: the checker re-arms
	c        *cron.Cron
	id       cron.EntryID

	mu     sync.Mutex
	fire   time.Time   // the latest fire time this instance has tried or checked
	state  fireOutcome // what the last attempt or check at fire came to
	wake   time.Time   // when the checker checks next; zero: not until a fire
	judged time.Time   // the latest fire time judged missed or not, past its window
	tried  time.Time   // the latest fire time this instance attempted, at its fire or at a check
}

// start runs the checker until the executor stops or the entry leaves c.
func (cj *catchUpJob) start() {
	e := cj.e
	if !e.beginLive() {
		return
	}
	go func() {
		defer e.endLive()
		cj.loop()
	}()
}

func (cj *catchUpJob) loop() {
	base := cj.e.base
	cj.check() // at start
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		cj.mu.Lock()
		wake := cj.wake
		cj.mu.Unlock()
		// robfig/cron tells no one of a removal (c.Remove): the checker looks
		// for its entry at least every entryPoll, so that it ends with the entry
		// rather than at Stop, and a job removed and added again leaves none behind.
		poll := time.Now().Add(cj.entryPoll())
		due := !wake.IsZero() && !wake.After(poll)
		if !due {
			wake = poll
		}
		t.Reset(time.Until(wake))
		select {
		case <-base.Done():
			return
		case <-cj.kick:
			if !t.Stop() { // a main module before go 1.23 keeps a fired timer's value
				select {
				case <-t.C:
				default:
				}
			}
			continue
		case <-t.C:
		}
		if !cj.c.Entry(cj.id).Valid() {
			return
		}
		if due {
			cj.check()
		}
	}
}

// minEntryPoll bounds how often an idle checker looks for its entry: each
// look copies c's entries, and a short retry delay is for failed runs, not
// for this.
const minEntryPoll = time.Second

// entryPoll is how often the checker looks for its entry while it has
// nothing due sooner: the retry delay, at least minEntryPoll.
func (cj *catchUpJob) entryPoll() time.Duration { return max(cj.retry, minEntryPoll) }

// fired is the attempt cron made at fire: the checker re-arms for it.
func (cj *catchUpJob) fired(fire time.Time, o fireOutcome) {
	cj.mu.Lock()
	cj.fire, cj.state, cj.tried = fire, o, fire
	cj.wake = cj.nextWakeLocked(time.Now())
	cj.mu.Unlock()
	select {
	case cj.kick <- struct{}{}:
	default:
	}
}

// nextWakeLocked is when to check cj.fire again after what it came to: after
// the retry delay, never past its window, unless it succeeded. cj.mu must be
// held.
func (cj *catchUpJob) nextWakeLocked(now time.Time) time.Time {
	if cj.state != fireOpen {
		return time.Time{}
	}
	return minTime(now.Add(cj.retry), cj.fire.Add(cj.window))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// check runs the latest fire time due if it is inside its window and not known
// to have succeeded; past its window, it judges whether it was missed.
func (cj *catchUpJob) check() {
	now := time.Now().In(cj.loc)
	fire := latestFire(cj.schedule.Next, now, checkHorizon)
	if fire.IsZero() { // none within a year: nothing to run until the next fire time
		cj.mu.Lock()
		cj.wake = time.Time{}
		cj.mu.Unlock()
		return
	}
	cj.mu.Lock()
	if !fire.Equal(cj.fire) {
		cj.fire, cj.state = fire, fireOpen
	}
	state := cj.state
	cj.mu.Unlock()
	o := state
	switch {
	case now.Sub(fire) >= cj.window:
		cj.judge(fire, state)
	case state == fireOpen:
		o = cj.attempt(fire)
	}
	cj.mu.Lock()
	if cj.fire.Equal(fire) {
		cj.state = o
		cj.wake = cj.nextWakeLocked(time.Now())
		if now.Sub(fire) >= cj.window {
			cj.wake = time.Time{} // the next fire time wakes it
		}
	}
	cj.mu.Unlock()
}

// attempt runs fire's run now, as a catch-up run, unless the store records it
// (or a later one) as succeeded.
func (cj *catchUpJob) attempt(fire time.Time) fireOutcome {
	if done, _ := cj.recorded(fire); done {
		return fireDone
	}
	cj.mu.Lock()
	cj.tried = fire
	cj.mu.Unlock()
	var ran bool
	var err error
	done := make(chan struct{})
	go func() { // a runtime.Goexit in the task ends this goroutine, not the checker
		defer close(done)
		ran, err = cj.runAt(fire, true)
	}()
	<-done
	return outcomeOf(ran, err)
}

// recorded reports whether the store records fire, or a later fire time, as
// succeeded, and whether it records any fire time. A store error counts as
// not recorded: the attempt that follows is conditional on the record anyway.
func (cj *catchUpJob) recorded(fire time.Time) (done, any bool) {
	e := cj.e
	ctx, cancel := context.WithTimeout(e.base, e.attempts.timeout)
	defer cancel()
	last, ok, err := cj.fl.LastFire(ctx, cj.cfg.Name)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.log.WarnContext(ctx, "shedlock: could not read the last fire time that succeeded", "lock", cj.cfg.Name, "error", err)
		}
		return false, true
	}
	return ok && !last.Before(fire.Truncate(time.Millisecond)), ok
}

// judge tells, once per fire time past its window, whether it was missed: no
// run of it, or of a later one, succeeded. A job whose store records no fire
// time at all has never succeeded anywhere, as a job just added: a fire time
// before this instance tried one is not reported then, only one it tried.
func (cj *catchUpJob) judge(fire time.Time, state fireOutcome) {
	cj.mu.Lock()
	seen := !cj.judged.Before(fire)
	cj.judged = fire
	tried := cj.tried.Equal(fire)
	cj.mu.Unlock()
	if seen || state != fireOpen {
		return
	}
	if done, any := cj.recorded(fire); done || (!any && !tried) {
		return
	}
	e := cj.e
	e.log.WarnContext(e.base, "shedlock: missed fire time: no run of it succeeded within its catch-up window",
		"lock", cj.cfg.Name, "fire_time", fire, "window", cj.window)
	e.emit(e.base, Event{Kind: EventMissedFireTime, Config: cj.cfg, FireTime: fire}, time.Time{})
}
