package shedlockgocron

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
)

// NewElector returns a gocron.Elector on l: a scheduler given it
// (gocron.WithDistributedElector) runs its jobs only while l leads. l must be
// started (shedlock.Leader.Start) for the instance ever to lead.
//
// gocron asks before each run and gives the job no context of the elector's:
// a job that must stop when the leadership ends takes l.Context() itself, and
// passes FenceFromContext's token with its writes. Asking costs no statement.
//
// gocron tells an elector nothing of a run's end; its scheduler monitor is
// told. The elector returned is also a gocron.SchedulerMonitor: give it to the
// same scheduler with gocron.WithSchedulerMonitor (SchedulerOptions gives
// both), and l.Stop waits for the runs it let start before it releases the
// lease, so that the next leader's scheduler never runs a job beside this
// one's. Without the monitor l.Stop cannot wait for them. Give each scheduler
// an elector of its own: one that is some scheduler's monitor counts the runs
// it lets start, and a run of a scheduler it does not monitor is never seen
// to end (l.Stop then waits until its ctx ends).
//
// A nil l gives an elector that never leads, with an error wrapping
// shedlock.ErrInvalidOption (the signature has no error to return).
func NewElector(l *shedlock.Leader) gocron.Elector { return &elector{l: l} }

// SchedulerOptions returns the options that make a gocron scheduler run its
// jobs only while l leads, with l.Stop waiting for the runs under way:
// gocron.WithDistributedElector and gocron.WithSchedulerMonitor, both with a
// new NewElector(l).
//
//	s, err := gocron.NewScheduler(shedlockgocron.SchedulerOptions(leader)...)
//
// A scheduler that needs a monitor of its own cannot have both: forward the
// elector's monitor methods from it.
func SchedulerOptions(l *shedlock.Leader) []gocron.SchedulerOption {
	e := &elector{l: l}
	return []gocron.SchedulerOption{gocron.WithDistributedElector(e), gocron.WithSchedulerMonitor(e)}
}

type elector struct {
	l *shedlock.Leader
	// monitored: some scheduler sends this elector its monitor's calls, so a
	// run it lets start is seen to end (JobCompleted or JobFailed).
	monitored atomic.Bool

	mu     sync.Mutex
	leaves []func() // one per run let start and not yet ended
}

var (
	_ gocron.Elector          = (*elector)(nil)
	_ gocron.SchedulerMonitor = (*elector)(nil)
)

// IsLeader returns nil while the leader leads, else an error wrapping
// shedlock.ErrNotLeader, so that gocron skips the run. As a scheduler's
// monitor too, it counts the run with the leader (Leader.EnterJob) until
// gocron reports its end.
func (e *elector) IsLeader(context.Context) error {
	if e.l == nil {
		return fmt.Errorf("%w: shedlockgocron.NewElector: nil leader", shedlock.ErrInvalidOption)
	}
	if !e.monitored.Load() {
		if !e.l.IsLeader() {
			return shedlock.ErrNotLeader
		}
		return nil
	}
	_, leave, leading := e.l.EnterJob()
	if !leading {
		return shedlock.ErrNotLeader
	}
	e.mu.Lock()
	e.leaves = append(e.leaves, leave)
	e.mu.Unlock()
	return nil
}

// ended is the end of a run gocron let start after IsLeader: any counted run
// stands for it, as each counts one.
func (e *elector) ended() {
	e.mu.Lock()
	var leave func()
	if n := len(e.leaves); n > 0 {
		leave, e.leaves = e.leaves[n-1], e.leaves[:n-1]
	}
	e.mu.Unlock()
	if leave != nil {
		leave()
	}
}

// The gocron.SchedulerMonitor methods. gocron calls JobRegistered before any
// run of the job, and exactly one of JobCompleted and JobFailed after each run
// that IsLeader let start.

func (e *elector) SchedulerStarted()                                   { e.monitored.Store(true) }
func (e *elector) SchedulerStopped()                                   {}
func (e *elector) SchedulerShutdown()                                  {}
func (e *elector) JobRegistered(gocron.Job)                            { e.monitored.Store(true) }
func (e *elector) JobUnregistered(gocron.Job)                          {}
func (e *elector) JobStarted(gocron.Job)                               {}
func (e *elector) JobRunning(gocron.Job)                               {}
func (e *elector) JobFailed(gocron.Job, error)                         { e.ended() }
func (e *elector) JobCompleted(gocron.Job)                             { e.ended() }
func (e *elector) JobExecutionTime(gocron.Job, time.Duration)          {}
func (e *elector) JobSchedulingDelay(gocron.Job, time.Time, time.Time) {}
func (e *elector) ConcurrencyLimitReached(string, gocron.Job)          {}
