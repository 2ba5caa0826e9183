// Package shedlock makes a periodic job run on at most one instance of a
// horizontally scaled service at a time, by taking a lock row in the database the
// service already has. It is a port of Java's ShedLock, sharing its table.
//
// A service makes a provider on its database, an executor on the provider, and
// wraps each robfig/cron job in a lock of its own name; every instance runs the
// same code, and each minute one of them runs the job:
//
//	db, err := sql.Open("mysql", dsn) // the service's own database; import its driver
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	provider, err := shedlock.NewMySQLProvider(db) // or NewPostgresProvider, NewSQLiteProvider, shedlockredis
//	if err != nil {
//		return err
//	}
//	if err := provider.EnsureTable(ctx); err != nil { // or run migrations/mysql
//		return err
//	}
//	ex := shedlock.NewExecutor(provider)
//	c := cron.New()
//	job := shedlock.JobFunc(cancelUnpaidOrders) // on one instance at a time
//	if _, err := c.AddJob("* * * * *", ex.WithLock("cancelUnpaidOrders", 10*time.Minute, 30*time.Second)(job)); err != nil {
//		return err
//	}
//	c.Start()
//
// The lock is held at most 10 minutes if the instance dies running the job, and
// at least 30 seconds, so that an instance whose clock is a little behind does
// not run the same minute again. [Executor.Run] runs one task under a lock by
// hand, [Executor.FixedDelay] a loop; see Shutdown below for stopping.
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
// Three additions narrow the gaps. Executor.Schedule holds each run's lock until
// just before the next fire time, so each fire time of a cron spec runs at most
// once across instances whatever their start times and within a clock skew
// bound. With CatchUp, a fire time missed while no instance was up, or whose
// run failed, runs once when an instance is back, and the store records each
// fire time that succeeded so that none succeeds twice. A fencing token (FenceOf, FenceFromContext), larger for every later
// acquisition of a name, lets the store a job writes to refuse the late write of
// a holder that was paused past its lock.
//
// # One row per name
//
// A lock is a row (name, lock_until, locked_at, locked_by). Every comparison uses
// the database's clock, so instances whose clocks differ still agree.
//
//	          upsert inserts, 1 row (first time the name is seen)
//	(no row) ─────────────────────────────────────────────┐
//	                                                      ▼
//	free ────── upsert: take the row if lock_until <= now ▶ held by A
//	▲  ▲                                                  │   │
//	│  └─ Unlock by A: lock_until =                       │   │
//	│     max(locked_at + LockAtLeastFor, now) ◀──────────┘   │
//	└──── now passes lock_until (A crashed or hung) ◀─────────┘
//
// On MySQL/MariaDB the upsert is INSERT ... ON DUPLICATE KEY UPDATE, each column
// changed only where lock_until <= now; on PostgreSQL INSERT ... ON CONFLICT
// (name) DO UPDATE ... WHERE lock_until <= now: one statement per attempt. SQLite
// sends INSERT OR IGNORE the first time (and when it has not seen the row for
// LockAtMostFor), then UPDATE ... WHERE lock_until <= now.
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
//   - No extension succeeds in time: the task's context ends with a cause
//     wrapping ErrLockLost, before another instance could take the lock by
//     waiting it out. The lock taken away behind its back (a forced unlock, its
//     row or key deleted): another instance may take it at once, and the task's
//     context ends, with ErrLockLost, only at its next extension, up to a third
//     of LockAtMostFor later.
//   - The task calls runtime.Goexit: its goroutine still ends, but only after the
//     lock is released; the Goexit is logged at error level. A fixed-delay loop
//     runs each task in a goroutine of its own, so the loop goes on.
//   - The service stops: Executor.Stop cancels running tasks, waits for them and
//     releases their locks, so the next instance need not wait for LockAtMostFor.
//
// # Job names
//
// One executor runs one job per lock name; a second registration is
// ErrDuplicateName. Names differing only by case, accents, emoji or trailing
// spaces count as one name ("job", "JOB", "jöb" and "job " are one row under
// MySQL's default collations), so they are refused too. A config the provider would refuse on every run (see
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
//
// # The store contract
//
// A store implements [LockProvider] and [Lock]; [LockConfig] names a lock
// and bounds its hold. The rest is optional, and the executor uses each where
// a provider has it: [BatchLocker] (attempts in one round trip), [FireLocker]
// (the fire-time record of CatchUp), [HoldGranularity], [NameKeyer],
// [ConfigChecker], [PoolSizer], [HoldChecker]; [Admin] for operators, and
// [Controller] and [RunRequester] for pausing a job everywhere and running it
// now. shedlocktest runs the conformance cases on any store.
//
// # The executor
//
// [Executor] runs tasks under locks: [Executor.Run] by hand, [Executor.WithLock]
// and [Executor.Wrap] for cron jobs, [Executor.Schedule] once per fire time,
// [Executor.FixedDelay] in a loop; [Executor.Stop] ends them. Executor options
// ([ExecutorOption]) and job options ([JobOption]) each stand beside their
// type; [Listener] receives the events. A job an operator paused is skipped
// ([SkipPaused]); [WithRunNowCheck] runs a job once per run-now request.
// [Executor.Jobs] lists the jobs and their next fire times.
//
// # The Leader
//
// A [Leader] holds one lease per group of jobs instead of a lock per run: jobs
// wrapped with [Leader.OnlyWhenLeading] (robfig/cron) or gated by
// shedlockgocron.SchedulerOptions run only on the instance that leads, under
// the leadership's context, at no statement per run. That context ends a
// margin before the lease could end in the store (the same margin as a task's),
// and carries the term's fencing token (FenceFromContext). [Leader.Stop] waits
// for the jobs running under it before it releases the lease. Its options
// ([LeaderOption]) are named WithLeader....
//
// # The SQL stores
//
// [NewMySQLProvider] (also MariaDB), [NewPostgresProvider] and
// [NewSQLiteProvider] keep locks in a table shared with Java ShedLock, on the
// service's own *sql.DB, with [ProviderOption]s; each is an Admin, a
// Controller and a FireLocker. Redis, etcd and Kubernetes stores are modules
// of their own.
//
// # Options
//
// Every constructor of this module and of its published modules (shedlockredis,
// shedlockprom, shedlockotel, shedlockgocron) takes options the same way: an
// option is a function that sets one thing and checks its own value, and the
// options apply in order. The first bad one, or a nil one, is an error wrapping
// ErrInvalidOption that names it (WithLogger: nil logger; option 2 is nil). A
// constructor that returns an error returns that; NewExecutor, which has no
// error to return, keeps it and returns it from every call (and WithLock panics
// with it), so the mistake shows at the first registration.
package shedlock
