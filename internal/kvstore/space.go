package kvstore

import (
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Space is the keys of one env: <prefix>:<env>:<name>, such as Redis's
// job-lock:default:report. Providers of different envs share a server
// without sharing locks.
type Space struct {
	env    string
	prefix string // <prefix>:<env>:
}

// NewSpace returns the keys of env that begin with prefix.
func NewSpace(prefix, env string) Space {
	return Space{env: env, prefix: prefix + ":" + env + ":"}
}

// Prefix is what every key of the space begins with: <prefix>:<env>:.
func (s Space) Prefix() string { return s.prefix }

// Key returns the key of the lock named name.
func (s Space) Key(name string) string { return s.prefix + name }

// Name returns the lock name of key, a key of the space.
func (s Space) Name(key string) string { return strings.TrimPrefix(key, s.prefix) }

// Where names the space in messages: "env default".
func (s Space) Where() string { return "env " + s.env }

// NotFound is the error of an operator's read or unlock of a lock that has
// no key: nobody holds it.
func (s Space) NotFound(name string) error {
	return fmt.Errorf("%w: %q in %s (no key %s: nobody holds it)", lockerr.LockNotFound, name, s.Where(), s.Key(name))
}
