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
	LockDB  *sql.DB // the pool locks are taken on (it may reach the database through faults)
	DB      *sql.DB // the journal's pool
	Table   string  // lock table
	Journal string  // journal table
	Pod     string  // the pod's name; its restarts keep it
	Log     *slog.Logger
}

// RunPod runs both jobs until ctx ends, then stops the executor gracefully:
// running tasks are cancelled, write their end, and release their locks.
func RunPod(ctx context.Context, c PodConfig) error {
	p, err := shedlock.NewMySQLProvider(c.LockDB, shedlock.WithTableName(c.Table), shedlock.WithLogger(c.Log))
	if err != nil {
		return fmt.Errorf("chaos: pod %s: %w", c.Pod, err)
	}
	defer p.Close()
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(c.Log))
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

// lockUntilUTC reads the lock table's lock_until, a TIMESTAMP, as a UTC DATETIME
// whatever the session's time zone: UNIX_TIMESTAMP of a TIMESTAMP column is
// its stored instant, and the rest is arithmetic.
const lockUntilUTC = "TIMESTAMPADD(MICROSECOND, ROUND(UNIX_TIMESTAMP(lock_until) * 1000000), '1970-01-01')"

// task journals one run: start (with the lock's lock_until), work, end, each
// from the database clock and on the journal's own pool, so that faults on the
// lock's connections cannot lose the record of a run.
func (c PodConfig) task(job string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		res, err := c.DB.ExecContext(ctx, "INSERT INTO "+c.Journal+" (job, pod, pid, started, lock_until) "+
			"VALUES (?, ?, ?, UTC_TIMESTAMP(6), (SELECT "+lockUntilUTC+" FROM "+c.Table+" WHERE name = ?))",
			job, c.Pod, os.Getpid(), job)
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
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	endCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
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
