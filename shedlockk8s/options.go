package shedlockk8s

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shedlock-go/shedlock"
)

// DefaultEnv is the env of the Leases when WithEnv is not given.
const DefaultEnv = "default"

// Option configures a Provider. Each option checks its own value: NewProvider
// returns a bad value, or a nil option, as an error wrapping
// [shedlock.ErrInvalidOption] that names the option (a nil one by its position,
// counting from 0).
type Option func(*options) error

type options struct {
	env      string
	lockedBy string
}

// WithEnv sets the env of the provider's Leases: providers with different envs
// share a namespace without sharing locks. The env is part of each Lease's name
// (LeaseName) and its label LabelEnv, by which Locks lists them. Default
// "default". It must be a valid label value: at most 63 characters,
// alphanumerics, '-', '_' and '.', beginning and ending with an alphanumeric.
func WithEnv(env string) Option {
	return func(o *options) error {
		if env == "" {
			return fmt.Errorf("%w: shedlockk8s.WithEnv(%q): must not be empty", shedlock.ErrInvalidOption, env)
		}
		if errs := validation.IsValidLabelValue(env); len(errs) > 0 {
			return fmt.Errorf("%w: shedlockk8s.WithEnv(%q): %s", shedlock.ErrInvalidOption, env, errs[0])
		}
		o.env = env
		return nil
	}
}

// maxLockedBy is the most characters of an owner, as shedlock.WithLockedBy
// allows: the Lease keeps it twice (holder and annotation), far below the
// API server's 256 KiB for all annotations.
const maxLockedBy = 200

// WithLockedBy sets the owner written into each acquisition, such as the
// pod's name; "" or no option means the host name (a pod's name in
// Kubernetes). It is for people reading the Leases: each acquisition is told
// from every other by a token of its own, whatever the owner, so providers
// given the same owner never release each other's locks. It is at most 200
// characters of valid UTF-8: the provider finds its own writes by comparing
// the acquisition it reads back, and JSON turns invalid UTF-8 into U+FFFD.
func WithLockedBy(id string) Option {
	return func(o *options) error {
		if utf8.RuneCountInString(id) > maxLockedBy || !utf8.ValidString(id) {
			return fmt.Errorf("%w: shedlockk8s.WithLockedBy(%.40q): at most %d characters of valid UTF-8",
				shedlock.ErrInvalidOption, id, maxLockedBy)
		}
		o.lockedBy = id
		return nil
	}
}
