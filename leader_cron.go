package shedlock

import (
	"fmt"

	"github.com/robfig/cron/v3"
)

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
