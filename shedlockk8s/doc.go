// Package shedlockk8s is a [shedlock.LockProvider] on Kubernetes: each lock
// is a coordination.k8s.io/v1 Lease in one namespace, written through
// client-go, so that a cluster's pods need no database to run a job on one
// pod at a time, and shedlock.Leader elects a leader with fencing tokens.
//
// # One Lease per lock
//
// The Lease of a lock is named [LeaseName] (shedlock-<slug>-<hash of env and
// name>); its annotations hold the lock's own name, the last acquisition
// (<owner>#<provider token>.<count>, unique to it), how long this version of
// the Lease stays held ([AnnotationHold], in milliseconds) and the catch-up
// record; spec.holderIdentity is the acquisition while held, empty once
// released. The provider never deletes a Lease.
//
// # Writes guarded by resourceVersion
//
// Every write is an update carrying the resourceVersion it was made from (a
// create when there is no Lease): the API server applies it only while the
// Lease is at that version, so a write that lost a race is refused, never
// applied over another. TryLock reads the Lease and, if it is free, writes
// itself in as holder: two requests. Unlock and Extend write on the version of
// the lock's own last write: one request each. A refused one reads the Lease,
// and goes on only while it is still this acquisition's (a write of its own
// whose answer was lost); another's is ErrLockLost, and is left as it is.
//
// # Time: no clock trusted
//
// A version of a Lease (one resourceVersion) is free to a pod once that pod
// has seen it unchanged for its hold on its own monotonic clock, as client-go's
// leader election times its record; the holder counts its own lock from when
// it sent the write that set the hold, which is before any pod can see it.
// Only elapsed times are compared, each on the clock that measured it, so
// clocks that are apart, or stepped, change nothing; the times written in the
// Lease are for people. The cost: a pod that did not see a version when it was
// written takes it over the hold after it first sees it, a poll or a tick
// later than a store with a clock of its own would let it.
//
// # Fencing tokens
//
// A lock's token (shedlock.FenceOf) is the resourceVersion of the write that
// took the Lease: an etcd revision, which grows with every write to the
// cluster, and each acquisition is applied after the previous one (guarded by
// a version written after it, or a create after the Lease's delete), so each
// later acquisition's token is larger, across pods, takeovers and a Lease
// deleted by hand.
//
// # RBAC
//
// The pod's service account needs get, create, update and list ([Verbs]) on
// leases.coordination.k8s.io in the namespace. A refused request is an error
// wrapping [ErrForbidden] that names the verb; EnsureTable (and the first
// HealthCheck) names every missing one.
//
// The repository's docs/kubernetes.md has the Role, the proofs, and the
// figures of shedlock.Leader measured beside client-go's LeaderElector.
package shedlockk8s
