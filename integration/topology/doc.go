// Package topology holds the tests of what fleets put between a service and its
// store: a pgbouncer in transaction pooling in front of PostgreSQL, and a
// 3-node MariaDB Galera cluster with a provider on every node. Each test starts
// the real component (Debian's pgbouncer and galera-4) on loopback ports and
// stops it; the Galera cluster is started once per test binary, on first use,
// and stopped by TestMain. It has no code of its own.
package topology
