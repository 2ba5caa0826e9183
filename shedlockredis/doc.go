// Package shedlockredis is a [shedlock.LockProvider] on Redis, with the key layout
// and commands of Java ShedLock's RedisLockProvider, so that Go and Java pods on
// one Redis exclude each other.
//
// # One key per lock
//
// A lock is the key job-lock:<env>:<name> (env is "default" unless set with
// [WithEnv]); its value is unique to one acquisition,
// ADDED:<time>@<lockedBy>:<token>, and its time to live is the lock's end. The
// time in the value is informational: nothing compares it.
//
//	        SET key value NX PX <LockAtMostFor ms> (Lua, with the fence)
//	free ──────────────────────────────────────────▶ held by A
//	▲  ▲                                              │   │
//	│  └─ Unlock by A (Lua, only while the value is   │   │
//	│     A's): DEL, or SET XX PX to what is left of  │   │
//	│     LockAtLeastFor, marked released ◀───────────┘   │
//	└──── the key's time to live runs out ◀───────────────┘
//
// Every call is one round trip, one Lua script by EVALSHA (EVALSHA then EVAL the
// first time a server has not seen the script, as after a restart or a
// failover): for TryLock, Java's SET NX PX and the fencing token (below); for
// Unlock and Extend, a check that the value is still ours. Every
// expiry is the server's clock: the provider sends durations, never instants, and
// works out what is left of LockAtLeastFor from the key's PTTL, so the clocks of
// the pods do not matter. An Extend sent twice answers with the PTTL the first
// send set, which after a shorter LockAtMostFor would count time that never
// passed: when an Extend's PTTL could be one it set itself, the time held it
// counts is at most what this process's monotonic clock measured since the
// acquisition's answer.
//
// A release also writes its value, for a minute, to the lock's released key
// ({job-lock:<env>:<name>}:released, beside the fence key), so that the same
// release sent again finds its own work done (see What Redis does not
// promise). Java ShedLock pods neither read nor write it.
//
// # Fencing tokens
//
// Each lock carries a fencing token (shedlock.FenceOf): the script that sets the
// lock's key also writes the larger of the last token + 1 and the server's clock
// in microseconds to the lock's fence key ([FenceKey]: {job-lock:<env>:<name>}:fence,
// in the lock key's Cluster slot; it has no time to live) and returns it. Tokens
// of one name grow with every acquisition, by Go pods, across a lock key deleted
// by hand and across a FLUSHALL (the clock then carries them, if it has not gone
// back behind the last token). A failover that loses the last writes can give
// a token again that a lost acquisition had: fencing is as durable as the
// lock. Java ShedLock pods neither read nor write the fence key. Measured on
// one host (Redis 7.0, loopback), a lock and unlock with the script costs about
// 1.17x one with a bare SET NX PX, some 7µs (BenchmarkRedisCycleFenceCost). A
// name whose key has a "}" outside a hash tag can have no fence key in its
// slot: its locks carry no token.
//
// # Batches
//
// [Provider.TryLockBatch] makes many attempts in one round trip, as an
// executor does at a herd's tick (shedlock.BatchLocker): one script does, for
// each lock in the order of their keys, what TryLock's does (SET NX PX, then
// the fencing token), and returns each lock's token or nil. Each lock is
// exactly a TryLock's: the same keys, a value of its own, the same Unlock and
// Extend. A config that fails validation is its entry's error and is not sent;
// a name given twice fails the batch before anything is sent.
//
// What it costs: on a single server (or Sentinel), one EVALSHA for the whole
// batch. Measured on one host (Redis 7.0, loopback), 300 attempts on free
// names took 3.9ms as a batch and 29ms as 300 TryLocks one after another
// (BenchmarkBatch300); the server ran the script in 2.7ms, and a script runs
// alone: every other client of that server waits for it, so a batch of
// thousands would stall them for tens of milliseconds. On a Cluster a script
// may touch only one hash slot: there is one script per slot among the batch's
// keys, sent in one pipeline that go-redis splits by node and sends to the
// nodes at once, one round trip each. Names without a shared hash tag are
// nearly all in slots of their own, so on a Cluster a batch saves round trips
// but not commands: a script per lock, pipelined. A *redis.Ring, or a client
// of another kind, gets one script per lock, in one pipeline. A batch of one
// script is sent as TryLock's is; a pipeline that meets NOSCRIPT (a restarted
// or new node) sends those scripts again by EVAL, one more round trip, and
// go-redis dials that node anew.
//
// A failure of the whole batch (the server unreachable, a replica, ctx ended)
// is an error and no results; on a Cluster, a slot whose script failed while
// others ran gives its entries the error. As with a TryLock whose reply was
// lost, a lock the server took before the failure is held until its
// LockAtMostFor, and its job skipped meanwhile.
//
// # Clients
//
// NewProvider takes a [redis.UniversalClient]: a single server (*redis.Client),
// Sentinel (redis.NewFailoverClient) or Cluster (*redis.ClusterClient). Every
// command and script of one lock touches that lock's key and the keys beside it
// (fence, released, fired, paused, runs), in one slot, so a Cluster routes each
// to the node that owns it; a batch's script, one slot's keys (see Batches).
//
// A context's deadline or cancellation stops a command waiting for a connection
// or a retry. It interrupts a command already sent only when the client has
// ContextTimeoutEnabled set; otherwise the client's ReadTimeout bounds it. Set it
// on the client you give the provider.
//
// # What Redis does not promise
//
// Redis replicates asynchronously. A lock written to a primary that fails before
// a replica has it is gone after the failover: another pod can take it while the
// first still runs its job. With Sentinel or Cluster, exclusion holds except
// across a failover; a job that must never overlap needs a store that commits
// before it answers (the SQL providers of package shedlock). Expiry, too, follows
// the primary's clock: a primary whose clock jumps ahead ends locks early.
//
// A command that fails after the server ran it (a connection lost before the
// reply) can leave a lock taken that the caller was told it did not get: the job
// is skipped until LockAtMostFor ends, never run twice. go-redis sends a command
// again when its connection drops before the answer (the client's MaxRetries):
// the provider's scripts are safe to run twice. An Unlock whose release ran but
// whose answer was lost reports nil when go-redis's own resend answers, and
// ErrReleaseFailed when no answer came at all; the lock is already free or
// keeps only what is left of LockAtLeastFor, and a later Unlock (within a
// minute) reports nil, even once another pod holds the lock, whose key it
// leaves alone. ErrLockLost means the lock ran out, was removed, or was taken
// over before the release ran. An Extend whose answer was lost leaves the
// lock held to the earlier of its two possible ends, for CheckHeld and for
// LockAtLeastFor, while the next Extend or Unlock still finds a key it
// extended.
//
// # Options
//
// Each option checks its own value. NewProvider returns a bad value, or a nil
// option, as an error wrapping [shedlock.ErrInvalidOption] that names the option
// (a nil one by its position, counting from 0), and sends nothing.
//
// # Servers that evict keys
//
// A Redis with maxmemory set deletes keys when its memory is full unless its
// maxmemory-policy is noeviction, and a lock's key is a key like any other (its
// time to live makes it a candidate under the volatile-* policies too): another
// pod then takes a lock that is still held. So the first TryLock of a provider
// reads maxmemory and maxmemory-policy (CONFIG GET; INFO memory where CONFIG is
// renamed, disabled or not permitted, as on managed services), on every primary
// of a Cluster, and refuses a server that may evict with an error wrapping
// [shedlock.ErrUnsafeStore] that names the setting and its remedy:
// maxmemory-policy noeviction, or maxmemory 0. Under noeviction a full server
// refuses new writes instead (TryLock returns its OOM error), and held locks
// stay. A server found safe is not asked again by that provider: a policy
// changed later, or a Sentinel failover to a primary configured otherwise, is not
// seen until the provider is made anew. [WithEvictionAllowed] accepts the risk.
//
// # When the task's context ends
//
// With shedlock.WithKeepAlive, the executor extends the lock every third of
// LockAtMostFor. What ends the task's context, and when, depends on how the lock
// was lost:
//
//   - Extensions fail (Redis down, timeouts): the task's context ends with an
//     ErrLockLost cause a margin (a tenth of LockAtMostFor, at most 5s) before the
//     key's time to live, as last set, runs out: before another pod can take the
//     lock. This holds.
//   - The key is removed or replaced behind the holder's back: a forced unlock
//     (the shedlock command's unlock, a DEL by hand), FLUSHALL or FLUSHDB, an
//     eviction (see above), or a failover that lost the write. Another pod can
//     take the lock at once, and the holder learns it only at its next extension,
//     up to a third of LockAtMostFor later (without keep-alive, only at its
//     Unlock): its task's context ends then, with an ErrLockLost cause, and until
//     then both pods run the job. Measured with a LockAtMostFor of 3s and a
//     FLUSHALL just after the lock was taken: both pods ran the job for 1.0s.
//
// # Operating the locks
//
// A Provider is a [shedlock.Admin], as the SQL providers are: Locks, Inspect,
// ForceUnlock, ForceUnlockSeen and HealthCheck, which the shedlock command uses.
// A key exists only while its lock is held, so only held locks are seen, with
// the names paused or with run-now requests (see below), and any other name is
// shedlock.ErrLockNotFound; EnsureTable has nothing to create. Locks reads them
// with one SCAN per primary, of the keys that contain job-lock:<env>:. The
// force unlocks delete the key in one script that compares first, and leave
// the fence key and the released key. [LuaScripts] gives tools the scripts the
// provider sends.
//
// # Pause, resume and run-now
//
// A Provider is a [shedlock.Controller] and a [shedlock.RunRequester]. Both keep
// their state beside the lock's key, in its slot, and neither ever changes the
// lock's own key:
//
//	{job-lock:<env>:<name>}:paused   a string: the pause's end in ms since 1970,
//	                                 "0" until Resume; a pause until a time has
//	                                 that end as its time to live (PEXPIREAT)
//	{job-lock:<env>:<name>}:runs     a hash: n, the run-now requests not yet run;
//	                                 done, the value of the acquisition that
//	                                 marked one run last
//
// (for a name with a hash tag of its own, {tag}:paused:<key> and
// {tag}:runs:<key>; [PausedKey], [RunsKey]). TryLock's script, a batch's and
// a fire time's read the paused key first, with EXISTS, and answer
// shedlock.ErrPaused without writing anything: a pause costs no round trip
// and no command more per attempt. Redis deletes a pause until a time at its
// end, by the server's clock, to the millisecond. RunNow is one HINCRBY;
// RunRequests one HGET per name, in one pipeline; RunDone one script that
// marks a request only while the lock's key holds the value of the
// acquisition that ran it, and records that value, so that the same
// acquisition marks one request at most. A name whose key has a "}" outside a
// hash tag can have no key beside its lock: it cannot be paused or run now
// ([shedlock.ErrInvalidConfig]). Java ShedLock pods neither read nor write
// these keys: they do not honour a pause.
//
// # Java ShedLock
//
// The key, the value's form and the commands are Java's: a Java pod's SET NX
// fails while a Go pod holds the key, and the reverse. A Java pod releases and
// extends only its own value when its RedisLockProvider is built with safe
// updates; without them, Java deletes or rewrites the key whatever it holds, and
// can free a Go pod's lock after its own has expired.
package shedlockredis
