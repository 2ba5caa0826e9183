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
//	        SET key value NX PX <LockAtMostFor ms>
//	free ──────────────────────────────────────────▶ held by A
//	▲  ▲                                              │   │
//	│  └─ Unlock by A (Lua, only while the value is   │   │
//	│     A's): DEL, or PEXPIRE to what is left of    │   │
//	│     LockAtLeastFor ◀────────────────────────────┘   │
//	└──── the key's time to live runs out ◀───────────────┘
//
// Every call is one round trip: SET for TryLock, one Lua script by EVALSHA for
// Unlock and for Extend (EVALSHA then EVAL the first time a server has not seen
// the script, as after a restart or a failover). Every
// expiry is the server's clock: the provider sends durations, never instants, and
// works out what is left of LockAtLeastFor from the key's PTTL, so the clocks of
// the pods do not matter.
//
// # Clients
//
// NewProvider takes a [redis.UniversalClient]: a single server (*redis.Client),
// Sentinel (redis.NewFailoverClient) or Cluster (*redis.ClusterClient). Every
// command and script touches one key, so a Cluster routes each to the node that
// owns it.
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
// is skipped until LockAtMostFor ends, never run twice. An Unlock that fails the
// same way after the server released the lock reports ErrReleaseFailed; the lock
// is already free or keeps only what is left of LockAtLeastFor.
//
// # Java ShedLock
//
// The key, the value's form and the commands are Java's: a Java pod's SET NX
// fails while a Go pod holds the key, and the reverse. A Java pod releases and
// extends only its own value when its RedisLockProvider is built with safe
// updates; without them, Java deletes or rewrites the key whatever it holds, and
// can free a Go pod's lock after its own has expired.
package shedlockredis
