package shedlock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// ProviderOption configures a SQL provider.
type ProviderOption func(*providerOptions)

type providerOptions struct {
	table          string
	lockedBy       string
	logger         *slog.Logger
	now            func() time.Time // nil: database time
	releaseRetries int
	releaseBackoff time.Duration
}

func defaultProviderOptions() providerOptions {
	return providerOptions{
		table:          "shedlock",
		logger:         slog.Default(),
		releaseRetries: 3,
		releaseBackoff: 100 * time.Millisecond,
	}
}

// WithTableName sets the lock table, default "shedlock". It must be a plain
// identifier (letters, digits, _ and $, not starting with a digit, at most 64
// characters), optionally qualified by a schema as "schema.table".
func WithTableName(name string) ProviderOption {
	return func(o *providerOptions) { o.table = name }
}

// WithLockedBy sets the owner written to locked_by. The default is the host name
// with a suffix unique to the provider instance. Two providers given the same
// owner can release each other's locks: keep it unique per provider.
func WithLockedBy(id string) ProviderOption {
	return func(o *providerOptions) { o.lockedBy = id }
}

// WithLogger sets where the provider logs retried releases. Default: slog.Default().
func WithLogger(l *slog.Logger) ProviderOption {
	return func(o *providerOptions) { o.logger = l }
}

// WithClientClock makes the provider compare lock times with now() of this process
// instead of the database clock. It exists to compare the two modes and for tests:
// with it, instances whose clocks differ by more than LockAtLeastFor can run the
// same job twice. The default, database time, has no such hazard.
func WithClientClock(now func() time.Time) ProviderOption {
	return func(o *providerOptions) { o.now = now }
}

// WithReleaseRetries sets how often a failed release is retried (default 3) and
// the wait before the first retry (default 100ms), doubled after each.
func WithReleaseRetries(retries int, backoff time.Duration) ProviderOption {
	return func(o *providerOptions) { o.releaseRetries, o.releaseBackoff = retries, backoff }
}

func (o *providerOptions) validate() error {
	switch {
	case len(o.lockedBy) > 255:
		return fmt.Errorf("%w: WithLockedBy: %d bytes, at most 255 fit locked_by", ErrInvalidOption, len(o.lockedBy))
	case o.logger == nil:
		return fmt.Errorf("%w: WithLogger: nil logger", ErrInvalidOption)
	case o.releaseRetries < 0 || o.releaseBackoff < 0:
		return fmt.Errorf("%w: WithReleaseRetries(%d, %v): both must be >= 0", ErrInvalidOption, o.releaseRetries, o.releaseBackoff)
	}
	if o.lockedBy == "" {
		o.lockedBy = DefaultOwner()
	}
	return nil
}

// DefaultOwner returns the host name followed by the process id and a random
// suffix: a value no other provider instance has.
func DefaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	owner := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	if len(owner) > 255 {
		owner = owner[len(owner)-255:]
	}
	return owner
}
