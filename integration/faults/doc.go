// Package faults holds the tests that put a faultproxy between MySQL providers
// and MariaDB: latency, connections reset during acquire, task and release, and
// a database that cannot be reached for a while. It has no code of its own; its
// tests run one at a time, so that each can check that it leaked no goroutine.
package faults
