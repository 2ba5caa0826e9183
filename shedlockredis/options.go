package shedlockredis

import (
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock"
)

// DefaultEnv is the env of the keys when WithEnv is not given, as in Java ShedLock.
const DefaultEnv = "default"

// Option configures a Provider.
type Option func(*options)

type options struct {
	env      string
	lockedBy string
	errs     []error
}

// WithEnv sets the env in the keys, job-lock:<env>:<name>: providers with
// different envs share a Redis without sharing locks. Default "default", as in
// Java ShedLock. It must not be empty or contain ':', which would make two envs'
// keys look alike.
func WithEnv(env string) Option {
	return func(o *options) {
		if env == "" || strings.Contains(env, ":") {
			o.errs = append(o.errs, fmt.Errorf("%w: WithEnv(%q): must be non-empty and without ':'", shedlock.ErrInvalidOption, env))
			return
		}
		o.env = env
	}
}

// WithLockedBy sets the owner written into each lock's value, after the '@',
// such as the pod's name; "" or no option means the host name. It is for people
// reading the keys: each acquisition's value is unique whatever the owner, so
// providers given the same owner still never release each other's locks.
func WithLockedBy(id string) Option {
	return func(o *options) { o.lockedBy = id }
}
