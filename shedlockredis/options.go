package shedlockredis

import "github.com/shedlock-go/shedlock/internal/kvstore"

// DefaultEnv is the env of the keys when WithEnv is not given, as in Java ShedLock.
const DefaultEnv = "default"

// Option configures a Provider. Each option checks its own value: NewProvider
// returns a bad value, or a nil option, as an error wrapping
// [shedlock.ErrInvalidOption] that names the option (a nil one by its position,
// counting from 0).
type Option func(*options) error

type options struct {
	kvstore.Options // env and owner, as every key-value store has them
	evictionAllowed bool
}

// WithEnv sets the env in the keys, job-lock:<env>:<name>: providers with
// different envs share a Redis without sharing locks. Default "default", as in
// Java ShedLock. It must not be empty or contain ':', which would make two envs'
// keys look alike.
func WithEnv(env string) Option {
	return func(o *options) error { return o.SetEnv("shedlockredis", env) }
}

// WithLockedBy sets the owner written into each lock's value, after the '@',
// such as the pod's name; "" or no option means the host name. It is for people
// reading the keys: each acquisition's value is unique whatever the owner, so
// providers given the same owner still never release each other's locks.
func WithLockedBy(id string) Option {
	return func(o *options) error { return o.SetLockedBy(id) }
}

// WithEvictionAllowed lets the provider take locks on a server that may delete
// them, which it otherwise refuses on first use with [shedlock.ErrUnsafeStore]:
// a server with maxmemory set and a maxmemory-policy other than noeviction, or
// one whose settings it cannot read (neither CONFIG GET nor INFO answers).
//
// What can go wrong: when such a server's memory fills, it deletes keys to make
// room, and a lock's key is one like any other (its time to live makes it a
// candidate under the volatile-* policies too). The lock is then free: another
// pod takes it and runs the job while the first still runs it. The first pod
// learns it only at its next Extend (with keep-alive, within about a third of
// LockAtMostFor), and the task's context ends then, after the overlap has begun.
// Measured with maxmemory 2mb, under every evicting policy: a held lock's key was
// gone after 13 to 40 writes of 64 KB by another client (13 under volatile-*,
// where the lock is the only key with a time to live), and a second provider
// took the lock at once. Use it only where memory never fills, or where a
// job running twice at once is harmless.
func WithEvictionAllowed() Option {
	return func(o *options) error {
		o.evictionAllowed = true
		return nil
	}
}
