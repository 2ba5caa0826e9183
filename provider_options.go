package shedlock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"
	"unicode/utf8"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// ProviderOption configures a SQL provider. It reports a bad value as an error
// wrapping ErrInvalidOption, which the constructor returns.
type ProviderOption func(*providerOptions) error

type providerOptions struct {
	table          string
	lockedBy       string
	logger         *slog.Logger
	releaseRetries int
	releaseBackoff time.Duration
}

// WithTableName sets the lock table, default "shedlock". It must be a plain
// identifier (letters, digits, _ and $, not starting with a digit, at most 64
// characters), optionally qualified by a schema as "schema.table".
func WithTableName(name string) ProviderOption {
	return func(o *providerOptions) error {
		if _, err := sqlstore.QuoteTable(name, '"'); err != nil {
			return err
		}
		o.table = name
		return nil
	}
}

// maxLockedByLength leaves room in locked_by (VARCHAR(255)) for the provider's
// suffix and the acquisition number.
const maxLockedByLength = 200

// WithLockedBy sets who the provider says holds its locks, such as the pod's name;
// the default is the host name. It is at most 200 characters. The provider adds
// a suffix of its own, so that no two providers share an owner even when they are
// given the same id, and a number per acquisition: locked_by reads
// "pod-a#3f9c2b1e7d4a6058.17".
func WithLockedBy(id string) ProviderOption {
	return func(o *providerOptions) error {
		if utf8.RuneCountInString(id) > maxLockedByLength || !utf8.ValidString(id) {
			return fmt.Errorf("%w: WithLockedBy(%q): at most %d characters of valid UTF-8", ErrInvalidOption, id, maxLockedByLength)
		}
		o.lockedBy = id
		return nil
	}
}

// WithLogger sets where the provider logs retried releases. Default: slog.Default().
func WithLogger(l *slog.Logger) ProviderOption {
	return func(o *providerOptions) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger: nil logger", ErrInvalidOption)
		}
		o.logger = l
		return nil
	}
}

// WithReleaseRetries sets how often a failed release is retried (default 3) and
// the wait before the first retry (default 100ms), doubled after each.
func WithReleaseRetries(retries int, backoff time.Duration) ProviderOption {
	return func(o *providerOptions) error {
		if retries < 0 || backoff < 0 {
			return fmt.Errorf("%w: WithReleaseRetries(%d, %v): both must be >= 0", ErrInvalidOption, retries, backoff)
		}
		o.releaseRetries, o.releaseBackoff = retries, backoff
		return nil
	}
}

// newProviderOptions applies opts to the defaults, and gives the owner its
// unique suffix.
func newProviderOptions(ctor string, opts []ProviderOption) (providerOptions, error) {
	o := providerOptions{table: "shedlock", logger: slog.Default(), releaseRetries: 3, releaseBackoff: 100 * time.Millisecond}
	if err := applyOptions(ctor, &o, opts); err != nil {
		return providerOptions{}, err
	}
	if o.lockedBy == "" {
		o.lockedBy = hostName()
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	o.lockedBy += "#" + hex.EncodeToString(b[:])
	return o, nil
}

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
