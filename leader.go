package shedlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/shedlock-go/shedlock/internal/eventqueue"
)

// ErrNotLeader is the cause of the context Leader.Context returns while this
// instance does not lead, and what shedlockgocron's elector answers then.
var ErrNotLeader = errors.New("shedlock: not the leader")

// Leader keeps at most one instance of a group leading at a time, on any
// LockProvider: it holds the lease `name` while it leads, extended in the
// store's time, and campaigns again when it does not.
//
// The lease is a lock like a job's (a row of the lock table, which the
// command's list shows): a follower tries to take it (TryLock, LockAtMostFor =
// lease, LockAtLeastFor 0) every retry period; the leader extends it every
// renew period (Extend, a third of the lease by default), and releases it on
// Stop, once the jobs run under the leadership have ended (it renews the lease
// until then). Each taking of the lease is a term, with its own fencing token.
//
// Choose one leader for a group of jobs that belong together (one instance
// polls the outbox, compacts and reports, and keeps caches for it); choose a
// lock per job (Executor) when each job may run on any instance and runs are
// short. A job run under the leader costs no statement: the lease is renewed
// whatever the jobs do.
//
// # Failover
//
// A leader that stops gracefully frees the lease once its jobs have ended: a
// follower leads within one retry period. One that dies keeps it until the lease runs out in
// the store: a follower leads within the lease plus one retry period. At the
// defaults (lease 15 s, retry 2 s, renew 5 s) a leader makes 12 statements a
// minute, a follower 30.
//
// # Safety
//
// The leadership's context (Context) ends a margin before the lease could
// end in the store (a tenth of the lease, at most 5 s, as a task's context
// does), counted from when the last successful renewal was sent: so an old
// leader stops before a new one can start, whatever the instances' wall
// clocks say, since the store alone decides when the lease ends and the
// leader measures only elapsed time. A leader paused past that (GC, a stopped
// VM) is told nothing until it runs again; writes it makes then must carry
// the term's fencing token (FenceFromContext on the leadership's context),
// which the store that receives them checks.
//
// Every wait is bounded: a campaign's TryLock by the lease less its margin (a
// lease that arrives later could not be acted on), a renewal by half the time
// the term has left (so that a hung connection leaves time to retry on
// another), and Stop by its ctx (its renewals while it waits for the jobs
// too: past ctx the lease runs out in the store).
type Leader struct {
	provider LockProvider
	cfg      LockConfig // Name, LockAtMostFor = the lease, LockAtLeastFor 0
	opts     leaderOptions
	events   *eventqueue.Queue[Event] // nil without listeners
	seq      runSeq                   // numbers terms for listeners

	loopCtx  context.Context // ends on Stop
	stopLoop context.CancelFunc
	done     chan struct{} // closed when the campaign loop has returned
	wake     chan struct{} // a term ended: campaign now

	hooks     *holdHooks    // what the terms' holds call back
	stopCause error         // the leadership context's cause on Stop
	stopTurn  chan struct{} // held by the Stop call that carries the shutdown on
	stopOut   chan struct{} // closed once the shutdown is done; stopErr is its outcome
	stopErr   error

	mu        sync.Mutex
	started   bool
	stopped   bool
	term      *term         // the current term; nil while following
	hold      *hold         // the last taking's hold, until Stop releases it
	stopLost  error         // the lease was lost while Stop waited for jobs
	stopWaits bool          // a Stop waits for jobs, renewing the lease
	jobs      int           // OnlyWhenLeading jobs running
	jobsOut   chan struct{} // closed when jobs reaches 0, for Stop; nil unless it waits
}

// NewLeader returns a leader for the group name with the given lease; it
// campaigns once started (Start). Bad input is an error wrapping
// ErrInvalidConfig (empty or over-long name, a lease under MinLeaderLease or
// one the store refuses) or ErrInvalidOption (nil provider, a bad or nil
// option).
func NewLeader(p LockProvider, name string, lease time.Duration, opts ...LeaderOption) (*Leader, error) {
	o := leaderOptions{retry: DefaultLeaderRetryPeriod}
	if err := applyOptions(fmt.Sprintf("NewLeader(%q)", name), &o, opts); err != nil {
		return nil, err
	}
	if o.log == nil {
		o.log = defaultExecutorOptions().logger
	}
	cfg := LockConfig{Name: name, LockAtMostFor: lease}
	if err := o.check(p, cfg); err != nil {
		return nil, err
	}
	l := &Leader{provider: p, cfg: cfg, opts: o, events: newEventQueue(o.listeners, o.log),
		done: make(chan struct{}), wake: make(chan struct{}, 1),
		stopCause: leaderStopped{name}, stopTurn: make(chan struct{}, 1), stopOut: make(chan struct{})}
	l.loopCtx, l.stopLoop = context.WithCancel(context.Background())
	l.hooks = &holdHooks{log: o.log, noun: "leader", ended: l.holdEnded, extend: extendLock, clock: newHoldClock()}
	return l, nil
}

// Start campaigns, in a goroutine of the leader's own, until Stop. A second
// Start, or one after Stop, does nothing.
func (l *Leader) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.stopped {
		return
	}
	l.started = true
	go l.loop()
}

// IsLeader reports whether this instance leads now: a term is under way and
// its context has not ended. It costs no statement.
func (l *Leader) IsLeader() bool { return l.live() != nil }

// Context is the leadership's context while this instance leads: it ends
// before the lease could end in the store (cause wrapping ErrLockLost), or on
// Stop (cause wrapping ErrStopped). It carries the term's lock, so that
// FenceFromContext gives the term's fencing token and AssertLocked passes
// while it lasts; the lock refuses Unlock and Extend, which are the leader's.
// While this instance does not lead, leading is false and ctx has ended, with
// the cause ErrNotLeader.
func (l *Leader) Context() (ctx context.Context, leading bool) {
	if t := l.live(); t != nil {
		return t.hold, true
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotLeader)
	return ctx, false
}

// live returns the current term if its context has not ended. A term whose
// end is due but whose timer has not fired yet (a process just resumed after
// a pause) is ended here, so that a caller asking before each action never
// acts on a term that has run out.
func (l *Leader) live() *term {
	l.mu.Lock()
	t := l.term
	l.mu.Unlock()
	if t == nil {
		return nil
	}
	t.hold.expireIfDue()
	if t.hold.Err() != nil {
		return nil
	}
	return t
}

// EnterJob counts a job that starts now under the leadership, for a
// scheduler that calls jobs without OnlyWhenLeading (which does this itself):
// while this instance leads, it returns the leadership's context, leading
// true, and leave, to call once the job has returned. Stop waits for every job
// entered and not yet left before it releases the lease, so that no job of
// this instance runs beside the next leader's. While this instance does not
// lead, or once Stop has begun, leading is false, ctx has ended, and leave
// does nothing: skip the job. leave may be called more than once.
func (l *Leader) EnterJob() (ctx context.Context, leave func(), leading bool) {
	ctx, leading = l.enterJob()
	if !leading {
		return ctx, func() {}, false
	}
	var once sync.Once
	return ctx, func() { once.Do(l.leaveJob) }, true
}

// enterJob returns the leadership's context for a job that runs now, and
// counts the job until leaveJob; leading is false after Stop.
func (l *Leader) enterJob() (ctx context.Context, leading bool) {
	ctx, leading = l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !leading {
		return ctx, false
	}
	if l.stopped { // Stop has begun and is about to end the term: an ended context
		ended, cancel := context.WithCancelCause(context.Background())
		cancel(l.stopCause)
		return ended, false
	}
	l.jobs++
	return ctx, true
}

func (l *Leader) leaveJob() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.jobs--; l.jobs == 0 && l.jobsOut != nil {
		close(l.jobsOut)
		l.jobsOut = nil
	}
}

// emit hands ev, stamped now, to the listeners, if any.
func (l *Leader) emit(ev Event) {
	if l.events == nil {
		return
	}
	ev.Config, ev.Time = l.cfg, time.Now()
	l.events.Push(context.Background(), ev)
}

// OnlyWhenLeading returns a robfig/cron JobWrapper that runs a job only while
// this instance leads, and does nothing otherwise. A ContextJob gets the
// leadership's context, which ends before the lease could end in the store,
// and carries the term's fencing token (FenceFromContext). A run costs no
// statement: the leader's renewals keep the lease whatever the jobs do.
//
// Unlike Executor.WithLock it binds no name, so one wrapper serves every job:
//
//	c := cron.New(cron.WithChain(leader.OnlyWhenLeading()))
//
// A job that was running when the term ended is not stopped (cron jobs cannot
// be); a ContextJob sees its context end. Stop waits for running jobs before
// it releases the lease. An error from a ContextJob is logged
// with the leader's logger. Wrapping a nil job panics with ErrInvalidJob.
func (l *Leader) OnlyWhenLeading() cron.JobWrapper {
	return func(j cron.Job) cron.Job {
		if j == nil {
			panic(fmt.Errorf("%w: leader %q: OnlyWhenLeading applied to a nil job", ErrInvalidJob, l.cfg.Name))
		}
		return cron.FuncJob(func() {
			ctx, leading := l.enterJob()
			if !leading {
				l.opts.log.Debug("shedlock: job skipped: this instance does not lead", "leader", l.cfg.Name)
				return
			}
			defer l.leaveJob()
			cj, ok := j.(ContextJob)
			if !ok {
				j.Run()
				return
			}
			if err := cj.RunContext(ctx); err != nil {
				l.opts.log.ErrorContext(ctx, "shedlock: job failed", "leader", l.cfg.Name, "error", err)
			}
		})
	}
}
