package shedlock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"
	"unicode/utf8"
)

// ProviderOption configures a SQL provider.
type ProviderOption func(*providerOptions)

type providerOptions struct {
	table          string
	lockedBy       string
	logger         *slog.Logger
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

// WithLockedBy sets who the provider says holds its locks, such as the pod's name;
// the default is the host name. It is at most 200 characters. The provider adds
// a suffix of its own, so that no two providers share an owner even when they are
// given the same id, and a number per acquisition: locked_by reads
// "pod-a#3f9c2b1e7d4a6058.17".
func WithLockedBy(id string) ProviderOption {
	return func(o *providerOptions) { o.lockedBy = id }
}

// WithLogger sets where the provider logs retried releases. Default: slog.Default().
func WithLogger(l *slog.Logger) ProviderOption {
	return func(o *providerOptions) { o.logger = l }
}

// WithReleaseRetries sets how often a failed release is retried (default 3) and
// the wait before the first retry (default 100ms), doubled after each.
func WithReleaseRetries(retries int, backoff time.Duration) ProviderOption {
	return func(o *providerOptions) { o.releaseRetries, o.releaseBackoff = retries, backoff }
}

func (o *providerOptions) validate() error {
	switch {
	case utf8.RuneCountInString(o.lockedBy) > maxLockedByLength || !utf8.ValidString(o.lockedBy):
		return fmt.Errorf("%w: WithLockedBy(%q): at most %d characters of valid UTF-8", ErrInvalidOption, o.lockedBy, maxLockedByLength)
	case o.logger == nil:
		return fmt.Errorf("%w: WithLogger: nil logger", ErrInvalidOption)
	case o.releaseRetries < 0 || o.releaseBackoff < 0:
		return fmt.Errorf("%w: WithReleaseRetries(%d, %v): both must be >= 0", ErrInvalidOption, o.releaseRetries, o.releaseBackoff)
	}
	if o.lockedBy == "" {
		o.lockedBy = hostName()
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	o.lockedBy += "#" + hex.EncodeToString(b[:])
	return nil
}

// maxLockedByLength leaves room in locked_by (VARCHAR(255)) for the provider's
// suffix and the acquisition number.
const maxLockedByLength = 200

func hostName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown-host"
	}
	if r := []rune(host); len(r) > maxLockedByLength {
		host = string(r[:maxLockedByLength])
	}
	return host
}
