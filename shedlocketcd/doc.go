// Package shedlocketcd is a [shedlock.LockProvider] on etcd (v3 API), with the
// keys and values of Java ShedLock's EtcdLockProvider, so that Go and Java pods
// on one cluster exclude each other; unlike Java's, its release and extension
// never write to a key another acquisition holds.
//
// # One key per lock, on a lease of its own
//
// A lock is the key shedlock:<env>:<name> (env is "default" unless set with
// [WithEnv]), attached to a lease; its value is ADDED:<time>@<lockedBy>, as
// Java writes it (the owner followed here by a token of the provider and a
// count, for people and for [Provider.ForceUnlockSeen]; the time is the pod's,
// and nothing compares it). etcd deletes the key when its lease ends: the
// lock's end is the cluster's clock, never a pod's.
//
//	        LeaseGrant(LockAtMostFor), then Txn: if the key's create_revision = 0,
//	        put it with the lease
//	free ───────────────────────────────────────────────▶ held by A (revision r)
//	▲  ▲                                                   │   │
//	│  └─ Unlock by A: Txn, only if create_revision = r    │   │
//	│     and the value is A's:                            │   │
//	│     delete, or put on the lease of LockAtLeastFor;   │   │
//	│     then LeaseRevoke of the first lease ◀────────────┘   │
//	└──── the lease runs out; etcd deletes the key ◀───────────┘
//
// TryLock is two requests (three with a LockAtLeastFor, whose lease is granted
// at the same time; three when the key is held, since the unused lease is
// revoked), Unlock two, Extend three (a lease of the new LockAtMostFor, the key
// moved to it by a transaction guarded as Unlock's, the old lease revoked).
//
// # Revisions: the guard and the fencing token
//
// Every write after the acquisition is a transaction that compares the key's
// create_revision with the acquisition's and its value with the one it wrote,
// unique to it: a key that expired and was taken by another pod (Go or Java),
// deleted by hand or by a forced unlock, has another creation revision, one
// overwritten by Java's unguarded release another value, and Unlock and
// Extend return ErrLockLost without touching it. A late Unlock never shortens
// or deletes a newer holder's key. Neither changes when a write of this lock
// is applied and its answer lost, so the next write finds the key all the
// same (see Failures).
//
// The lock's fencing token (shedlock.FenceOf) is the revision that created the
// key, from the acquiring transaction's answer, at no extra request. etcd's
// revision counts every write to the cluster, so the token of a later
// acquisition is larger, of this name or any other, by any pod, Java's
// included (they carry no token but take a revision all the same).
//
// # Time: leases in whole seconds
//
// A lease's TTL is whole seconds: the provider asks for LockAtMostFor rounded
// up ([TTLSeconds]), and the cluster raises a TTL below its minimum, 1.5
// election timeouts rounded up to the second (2s at etcd's defaults of a 100ms
// heartbeat and a 1s election timeout). A lock is so never shorter than asked,
// and may be held up to a second longer (more below the minimum); the leader
// looks for ended leases every 500ms, so a dead holder's lock is free within
// LockAtMostFor rounded up to the second, plus up to about half a second.
//
// LockAtLeastFor is a second lease granted beside the first at the
// acquisition, so that the cluster counts it too: Unlock moves the key to it
// while it may still run, and the lock ends when it does. An Extend that
// changes LockAtLeastFor grants a new one for what is left of it, counted on
// the pod's monotonic clock from when the acquisition was answered, after the
// cluster made the put: it errs towards holding longer.
//
// [Provider.HoldGranularity] says so: shedlock.Schedule asks for holds in
// whole seconds, rounded down, that end the skew bound before the next fire
// time, and Unlock deletes the key once LockAtLeastFor has passed. Its first
// call learns the cluster's minimum TTL ([Provider.ProbeMinTTL]: a lease of
// 1s, which the cluster raises to its minimum, revoked at once), so that
// Schedule refuses a spec that a cluster with a longer one cannot serve.
// UnlockSucceeded rounds what is left of its hold down, and keeps none below
// the minimum TTL.
//
// A pod counts nothing against the lease's end except for itself: a lock's
// CheckHeld and an Extend refuse once LockAtMostFor as asked has passed since
// the last grant was sent (before the cluster began to count), even while the
// rounded-up lease still runs. After an Extend whose answer was lost, CheckHeld
// counts to the earlier of the ends the key may have, and the next Extend or
// Unlock looks for it until the later.
//
// # What a leader change does to leases
//
// A leader's lessor keeps the leases' deadlines; a new leader (after a crash,
// a partition or a transfer) gives every lease its full TTL again, counted
// from its election (etcd 3.4 without --experimental-enable-lease-checkpoint;
// with it, the remaining TTL is checkpointed, every five minutes by default).
// A leader change so only lengthens locks: a dead holder's lock is free
// within LockAtMostFor, rounded up, after the last leader change. It never
// shortens one, and the holder's own view (above) does not count on it. A
// hold kept after a release would outlive the next fire time of a
// shedlock.Schedule'd job, so the releasing process revokes the hold's lease
// when the hold ends, on its own clock; a holder that dies during a hold
// leaves it to the renewed TTL (shedlock.CatchUp then runs that fire time late).
//
// # Failures
//
// A request that fails after the cluster ran it (a connection lost before the
// answer, a leader killed) can leave a lock taken that the caller was told it
// did not get: TryLock then revokes the lease it granted, which deletes that
// key if it was put, and no other; if that fails too, the lock is held until
// LockAtMostFor and its job skipped meanwhile, never run twice. An Extend
// that fails so revokes no lease the key may be on: the key stays its
// holder's, and the next Extend or Unlock finds it by the guard above, which
// such a write does not change. An Unlock is sent again, up to three times
// with a backoff, while its context allows (the retry of one whose answer
// was lost, finding the key gone, reports it released); when no try is
// answered it reports ErrReleaseFailed. A lease that could not be revoked
// ends by itself at its TTL.
//
// etcd commits a transaction on a quorum of members before it answers: a
// lock survives the loss of a minority of the cluster, and its leader. Tested
// on a private three-member cluster of etcd 3.4 (Debian's etcd-server): four
// processes contending for three names for 60s while the leader was SIGKILLed
// and restarted twice and one process's connections were reset, with 0 lost
// updates and 0 overlapping runs (make chaos-etcd).
//
// # Admin
//
// A Provider is a shedlock.Admin: Locks and Inspect read the keys of its env,
// each held while it exists, and their leases' time left (the cluster's, in
// whole seconds rounded down, plus a second), with each name's Control (its
// pause and run-now requests, below), a paused name nobody holds included, in
// one request; ForceUnlock
// deletes a key; ForceUnlockSeen deletes it only while it holds the
// acquisition shown, by a transaction guarded by its revision; HealthCheck
// sends a transaction with a write that never applies, so that it goes
// through consensus like a lock; EnsureTable does nothing.
//
// # Catch-up: the fired key
//
// A Provider is a shedlock.FireLocker, so shedlock.CatchUp works on it. The
// last fire time whose run of a lock succeeded is the key
// shedlock-fired:<env>:<name> ([Provider.FiredKey]), on no lease (it outlives
// the locks), its value milliseconds since 1970 zero-padded to 19 digits, so
// that etcd's comparison of values, byte by byte, orders them as times.
// TryLockFire's one transaction puts the lock's key only if it is absent and
// the fired key is absent or older; a comparison on the value of an absent key
// never holds, so the second case is a transaction nested in the first's
// failure branch, still one request. UnlockSucceeded's one releasing
// transaction, guarded by the revision as Unlock's, records the fire time in
// a transaction nested beside the key's delete or move, never moving the
// record back; its leastFor is a lease granted first, for what is left of it
// since the acquisition. Locks and the shedlock command's list see a fired
// key's time only beside a key that is held: a free lock has no key.
//
// # Pause, resume and run-now
//
// A Provider is a shedlock.Controller and a shedlock.RunRequester. A pause is
// the key shedlock-paused:<env>:<name> ([Provider.PausedKey]), its value the
// pause's end in milliseconds since 1970 zero-padded to 19 digits, or 19
// nines until Resume; a pause until a time is on a lease of what is left until
// then, so that etcd deletes the key afterwards. TryLock's and TryLockFire's
// one transaction puts the lock's key only if the paused key is absent or, in
// a transaction nested in the failure branch, holds an end below the
// acquiring pod's clock; it reads the paused key when both fail, to tell a
// pause (an error wrapping shedlock.ErrPaused) from a held lock: the same
// requests as an attempt on a held name. The end is compared as a value, not
// left to the lease alone, since a new leader gives every lease its whole TTL
// again; so a pause ends to the millisecond by the pods' clocks, not in whole
// seconds. Run-now requests are the key shedlock-runs:<env>:<name>
// ([Provider.RunsKey]), "<requests> <fencing token of the acquisition that
// marked one run last>": RunNow writes one more by a transaction guarded by
// the key's revision; RunRequests reads the env's keys in one request;
// RunDone marks one by a transaction guarded by the lock's key, as Extend's,
// and by that revision, recording the token, so that one acquisition marks at
// most one. No lock's key has these forms. Java ShedLock pods neither read nor
// write them: they do not honour a pause.
//
// # Java ShedLock
//
// The key and the acquisition are Java's: Java puts the key if its version is
// 0, Go if its create_revision is 0, both meaning absent; a Java pod's
// transaction fails while a Go pod holds the key, and the reverse. Java's
// release is unguarded: it revokes its lease, which is safe, or, with
// LockAtLeastFor left by its pod's clock, puts its value on a new short lease
// whoever holds the key, which overwrites a newer holder's key after the Java
// lock ran out. Share a cluster with Java pods only where that cannot happen:
// Java's LockAtLeastFor well below its LockAtMostFor.
package shedlocketcd
