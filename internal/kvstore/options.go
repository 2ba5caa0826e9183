// Package kvstore holds what the key-value stores (shedlockredis,
// shedlocketcd, and those to come, such as a Kubernetes Lease store) do
// alike: the options every one takes and its constructor's checks (this
// file), the owner each provider writes into its values (owner.go), the keys
// of one env (space.go), and what a held lock knows of itself (hold.go).
// Each store's requests (Lua scripts, etcd transactions) stay in its module.
//
// The store modules import it across module lines, which Go allows for
// github.com/shedlock-go/shedlock/... paths. A store of one release may then
// be built with the root of a later one, so what is here is a contract
// between modules: add, never change or remove.
package kvstore

import (
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/apply"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Options is what every key-value store's options set. A store's own options
// struct embeds it, and its WithEnv and WithLockedBy call SetEnv and
// SetLockedBy.
type Options struct {
	Env      string // the env in every key; the store sets its default
	LockedBy string // the owner in every value; "" for the host name
}

// SetEnv is WithEnv of the store package pkg: env must not be empty or
// contain ':', which would make two envs' keys look alike.
func (o *Options) SetEnv(pkg, env string) error {
	if env == "" || strings.Contains(env, ":") {
		return fmt.Errorf("%w: %s.WithEnv(%q): must be non-empty and without ':'", lockerr.InvalidOption, pkg, env)
	}
	o.Env = env
	return nil
}

// SetLockedBy is WithLockedBy: any owner, "" for the host name.
func (o *Options) SetLockedBy(id string) error {
	o.LockedBy = id
	return nil
}

// Configure is what a store's constructor ctor ("shedlockredis.NewProvider")
// checks before it builds anything: a nil client is an error wrapping
// lockerr.InvalidOption (shedlock.ErrInvalidOption), and opts apply to dst
// in order (see apply.Options).
func Configure[T any, O ~func(*T) error](ctor string, nilClient bool, dst *T, opts []O) error {
	if nilClient {
		return fmt.Errorf("%w: %s: nil client", lockerr.InvalidOption, ctor)
	}
	return apply.Options(ctor, dst, opts)
}
