// Package shedlockk8s is a [shedlock.LockProvider] on Kubernetes: each lock
// is a coordination.k8s.io/v1 Lease in one namespace, written through
// client-go, so that a cluster's pods need no database to run a job on one
// pod at a time.
package shedlockk8s
