package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/shedlock-go/shedlock"
)

// Jobs are the two jobs every pod runs, as in the article: an order-timeout
// canceller and an outbox poller.
var Jobs = [2]string{"orderTimeoutCancelJob", "outboxPollJob"}

// Params are the timings every pod and the analysis share.
type Params struct {
	LockAtMostFor  time.Duration
	LockAtLeastFor time.Duration
	Delay          time.Duration // fixed delay between the runs of a pod's loop
	WorkMin        time.Duration // each run works a random time in [WorkMin, WorkMax]
	WorkMax        time.Duration
}

// PodConfig configures one pod process.
type PodConfig struct {
	Params
	Provider shedlock.LockProvider // the locks (their connections may pass through faults)
	// TimeLeft reads from the store how long job's lock has left, never more
	// than it had when asked; ok is false when there is no lock.
	TimeLeft func(ctx context.Context, job string) (left time.Duration, ok bool, err error)
	DB       *sql.DB // the journal's pool
	Journal  string  // journal table
	Pod      string  // the pod's name; its restarts keep it
	Log      *slog.Logger
}

// RunPod runs both jobs until ctx ends, then stops the executor gracefully:
// running tasks are cancelled, write their end, and release their locks.
func RunPod(ctx context.Context, c PodConfig) error {
	ex := shedlock.NewExecutor(c.Provider, shedlock.WithExecutorLogger(c.Log))
	for _, job := range Jobs {
		cfg := shedlock.LockConfig{Name: job, LockAtMostFor: c.LockAtMostFor, LockAtLeastFor: c.LockAtLeastFor}
		if err := ex.FixedDelay(cfg, c.Delay, c.task(job)); err != nil {
			return fmt.Errorf("chaos: pod %s: %w", c.Pod, err)
		}
	}
	ex.Start()
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := ex.Stop(stopCtx); err != nil {
		return fmt.Errorf("chaos: pod %s: %w", c.Pod, err)
	}
	return nil
}

// task journals one run: start (with the lock's end), work, end, each from the
// journal's clock and on the journal's own pool, so that faults on the lock's
// connections cannot lose the record of a run.
//
// The lock's end comes from the store's clock, which need not be the
// journal's: the journal's time, then the time the lock has left as the store
// tells it afterwards. Their sum is no later than the lock's true end on the
// journal's clock, so a takeover before it is a lock taken while held.
func (c PodConfig) task(job string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		started, err := DBNow(ctx, c.DB)
		if err != nil {
			return fmt.Errorf("journal start: %w", err)
		}
		left, ok, err := c.TimeLeft(ctx, job)
		if err != nil {
			return fmt.Errorf("journal start: lock's time left: %w", err)
		}
		var lockUntil any // NULL: no lock in the store, under the lock
		if ok {
			lockUntil = started.Add(left).UnixMicro()
		}
		// The start is written whatever becomes of the task's context meanwhile:
		// an INSERT cut off by a graceful stop can still commit, and a run whose
		// start is recorded must record its end.
		recordCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), journalDeadline(ctx))
		defer cancel()
		res, err := c.DB.ExecContext(recordCtx, "INSERT INTO "+c.Journal+" (job, pod, pid, started, lock_until) "+
			"VALUES (?, ?, ?, TIMESTAMPADD(MICROSECOND, ?, '1970-01-01'), TIMESTAMPADD(MICROSECOND, ?, '1970-01-01'))",
			job, c.Pod, os.Getpid(), started.UnixMicro(), lockUntil)
		if err != nil {
			return fmt.Errorf("journal start: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("journal start: %w", err)
		}
		work := c.WorkMin
		if c.WorkMax > c.WorkMin {
			work += rand.N(c.WorkMax - c.WorkMin)
		}
		t := time.NewTimer(work)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		return errors.Join(c.journalEnd(ctx, id), context.Cause(ctx))
	}
}

// journalEnd writes a run's end, retrying while the lock is still ours: until the
// task's deadline, which the executor sets before the lock's LockAtMostFor ends.
// A run cancelled by a graceful stop still writes its end before the release.
func (c PodConfig) journalEnd(ctx context.Context, id int64) error {
	endCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), journalDeadline(ctx))
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		_, err := c.DB.ExecContext(endCtx, "UPDATE "+c.Journal+" SET ended = UTC_TIMESTAMP(6) WHERE id = ?", id)
		if err == nil {
			return nil
		}
		if sleep(endCtx, wait) != nil {
			return fmt.Errorf("journal end: %w", err)
		}
	}
}

// journalDeadline is how long a run's journal writes may take: while the lock
// is still ours, until the task's deadline, which the executor sets before the
// lock's LockAtMostFor ends.
func journalDeadline(ctx context.Context) time.Time {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline
	}
	return time.Now().Add(5 * time.Second)
}
