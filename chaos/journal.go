// Package chaos runs lock-holding jobs in many OS processes against one lock
// store (MySQL/MariaDB, PostgreSQL, Redis or a SQLite file), kills and stops
// those processes, and checks from a journal of every run that the lock held: no
// two runs of a job overlapped, and the job came back promptly after each crash
// and each graceful stop.
//
// A pod (RunPod) runs two fixed-delay jobs under shedlock. Each run writes its
// start, with the lock's end, to the journal as its first act under the lock
// and its end as its last, both from the journal's clock, so a journal interval
// lies inside the time the lock was held. The journal is a MySQL/MariaDB table
// whatever the store: it observes the locks and holds none. The lock's end is
// read from the store as the time it has left, a duration on the store's own
// clock, and added to a journal time read before it, so that it is never later
// on the journal's clock than the lock's true end. The supervisor (Supervise)
// starts the pods, SIGKILLs or SIGTERMs one every few seconds, restarts it, and
// records each event, again with the journal's clock. Analyze reads the two
// together.
package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Run is one journal row: one run of a job by one pod process.
type Run struct {
	ID      int64
	Job     string
	Pod     string
	PID     int
	Started time.Time
	Ended   time.Time // zero: the run never recorded its end
	// LockUntil is the lock's end (lock_until, or a Redis key's expiry) on the
	// journal's clock, as the run read it first under the lock, less at most a
	// round trip and 1ms: how long the lock outlives the run's pod if it is
	// killed. Zero: the store had no lock.
	LockUntil time.Time
}

// CreateJournal creates the journal table if it does not exist.
func CreateJournal(ctx context.Context, db *sql.DB, table string) error {
	_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+` (
		id      BIGINT AUTO_INCREMENT PRIMARY KEY,
		job     VARCHAR(64) NOT NULL,
		pod     VARCHAR(64) NOT NULL,
		pid     INT NOT NULL,
		started DATETIME(6) NOT NULL,
		ended   DATETIME(6) NULL,
		lock_until DATETIME(6) NULL
	) ENGINE=InnoDB`)
	if err != nil {
		return fmt.Errorf("chaos: create journal %s: %w", table, err)
	}
	return nil
}

// ReadJournal returns every run, oldest start first.
func ReadJournal(ctx context.Context, db *sql.DB, table string) ([]Run, error) {
	rows, err := db.QueryContext(ctx, "SELECT id, job, pod, pid, "+
		"TIMESTAMPDIFF(MICROSECOND, '1970-01-01', started), "+
		"COALESCE(TIMESTAMPDIFF(MICROSECOND, '1970-01-01', ended), 0), "+
		"COALESCE(TIMESTAMPDIFF(MICROSECOND, '1970-01-01', lock_until), 0) FROM "+table+" ORDER BY started, id")
	if err != nil {
		return nil, fmt.Errorf("chaos: read journal: %w", err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		var r Run
		var started, ended, lockUntil int64
		if err := rows.Scan(&r.ID, &r.Job, &r.Pod, &r.PID, &started, &ended, &lockUntil); err != nil {
			return nil, fmt.Errorf("chaos: read journal: %w", err)
		}
		r.Started = time.UnixMicro(started).UTC()
		if ended != 0 {
			r.Ended = time.UnixMicro(ended).UTC()
		}
		if lockUntil != 0 {
			r.LockUntil = time.UnixMicro(lockUntil).UTC()
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chaos: read journal: %w", err)
	}
	return runs, nil
}

// DBNow reads the database clock, the one clock that journal and events share.
func DBNow(ctx context.Context, db *sql.DB) (time.Time, error) {
	var us int64
	if err := db.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))").Scan(&us); err != nil {
		return time.Time{}, fmt.Errorf("chaos: read database clock: %w", err)
	}
	return time.UnixMicro(us).UTC(), nil
}
