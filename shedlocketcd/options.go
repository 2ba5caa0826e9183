package shedlocketcd

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
}

// WithEnv sets the env in the keys, shedlock:<env>:<name>: providers with
// different envs share a cluster without sharing locks. Default "default", as
// in Java ShedLock's EtcdLockProvider. It must not be empty or contain ':',
// which would make two envs' keys look alike.
func WithEnv(env string) Option {
	return func(o *options) error { return o.SetEnv("shedlocketcd", env) }
}

// WithLockedBy sets the owner written into each lock's value, after the '@',
// such as the pod's name; "" or no option means the host name. It is for people
// reading the keys: an acquisition is told from every other by the key's
// revision, whatever the owner, so providers given the same owner still never
// release each other's locks.
func WithLockedBy(id string) Option {
	return func(o *options) error { return o.SetLockedBy(id) }
}
