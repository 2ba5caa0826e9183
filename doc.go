// Package shedlock makes a periodic job run on at most one instance of a
// horizontally scaled service at a time, by taking a lock row in the database the
// service already has. It is a port of Java's ShedLock, sharing its table.
//
// # The guarantee, and its limits
//
// While one instance holds a name's lock, no other instance gets it: a job run
// under the lock never runs beside another run of itself. That is mutual
// exclusion, not exactly-once. A tick can be skipped (the holder crashed and the
// lock stays until LockAtMostFor) or repeated (a run outlived LockAtMostFor, or
// LockAtLeastFor was shorter than the spread of the instances' schedules), so jobs
// must be safe to run again and to miss a turn.
//
// # One row per name
//
// A lock is a row (name, lock_until, locked_at, locked_by). Every comparison uses
// the database's clock, so instances whose clocks differ still agree.
//
//	          INSERT IGNORE, 1 row (first time the name is seen)
//	(no row) ─────────────────────────────────────────────┐
//	                                                      ▼
//	free ────── UPDATE ... WHERE lock_until <= now ─────▶ held by A
//	▲  ▲                                                  │   │
//	│  └─ Unlock by A: lock_until =                       │   │
//	│     max(locked_at + LockAtLeastFor, now) ◀──────────┘   │
//	└──── now passes lock_until (A crashed or hung) ◀─────────┘
//
// On PostgreSQL the INSERT and the UPDATE are one statement, INSERT ... ON
// CONFLICT (name) DO UPDATE ... WHERE lock_until <= now, sent for every
// acquisition.
//
// Only the owner (locked_by, unique per provider instance) can release or extend,
// and a provider never lets an old handle release a newer acquisition of its own.
//
// # Failure handling
//
//   - Another instance holds the lock: TryLock returns ErrNotAcquired;
//     Executor.Run returns (false, nil) and logs at debug level.
//   - The store fails (database down, timeout): the task does not run; the error
//     is returned and logged. A job never runs without its lock.
//   - The task fails or panics: the lock is released at once (keeping
//     LockAtLeastFor), with a context of its own; a panic becomes ErrTaskPanicked.
//   - The release fails: it is retried; if every try fails the lock stays until
//     its lock_until, and the error (ErrReleaseFailed) says so.
//   - The task runs too long: its context ends shortly before LockAtMostFor runs
//     out, with ErrLockExpired as the cause; this process never starts a second run
//     of the same name while the first is still going. With keep-alive
//     (WithKeepAlive, or the job option KeepAlive) the lock is extended instead,
//     every third of LockAtMostFor, and the context's deadline moves with it.
//   - The lock is taken away while keep-alive runs (its row deleted or stolen),
//     or no extension succeeds in time: the task's context ends with a cause
//     wrapping ErrLockLost, before another instance could take the lock.
//   - The task calls runtime.Goexit: its goroutine still ends, but only after the
//     lock is released; the Goexit is logged at error level. A fixed-delay loop
//     runs each task in a goroutine of its own, so the loop goes on.
//   - The service stops: Executor.Stop cancels running tasks, waits for them and
//     releases their locks, so the next instance need not wait for LockAtMostFor.
//
// # Job names
//
// One executor runs one job per lock name; a second registration is
// ErrDuplicateName. Names differing only by case or trailing spaces count as one
// name ("job", "JOB" and "job " are one row under MySQL's default collations), so
// they are refused too. A config the provider would refuse on every run (see
// ConfigChecker) is refused at registration.
//
// # The task's context
//
// A task's context carries its lock: LockFromContext returns it, so that the
// task can Extend it by hand (the context's deadline follows), and AssertLocked
// tells code that must only run under a lock whether it does
// (shedlocktest.LockedContext satisfies it in unit tests). The context's cause
// says why it ended: ErrStopped, ErrLockExpired, ErrLockLost, or the caller's.
//
// # Seeing what the locks do
//
// Listeners (WithListener) receive every event of every run: attempt, skip and
// why, store error, acquisition, extension, loss, the task's end and result,
// release. They are called from a goroutine of the executor's own, so a slow
// one holds no lock; the modules shedlockprom and shedlockotel turn the events
// into Prometheus metrics and OpenTelemetry metrics and spans. Logs stay on
// log/slog; WithSkipLogLevel raises skipped runs from debug.
//
// # Shutdown
//
// Stop the executor before waiting for a cron scheduler's running jobs:
//
//	err := ex.Stop(ctx)  // cancels running jobs, waits for them, releases their locks
//	<-c.Stop().Done()    // no more ticks; the jobs have already ended
//
// The other way round, cron waits for jobs that nothing has cancelled, possibly
// until the platform kills the process, and their locks stay held until
// LockAtMostFor. Give ctx a deadline inside the time the platform allows for
// shutdown (a Kubernetes pod's terminationGracePeriodSeconds).
package shedlock
