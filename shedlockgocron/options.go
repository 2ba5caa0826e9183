package shedlockgocron

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/shedlock-go/shedlock"
)

// Option configures a Locker. Each option checks its own value: NewLocker
// returns a bad value, or a nil option, as an error wrapping
// shedlock.ErrInvalidOption that names the option (a nil one by its position,
// counting from 0).
type Option func(*Locker) error

// WithJob sets the durations of the lock of the job named name (its
// gocron.WithName), in place of NewLocker's.
func WithJob(name string, lockAtMostFor, lockAtLeastFor time.Duration) Option {
	return func(l *Locker) error {
		if _, dup := l.jobs[name]; dup {
			return fmt.Errorf("%w: shedlockgocron.WithJob(%q): given twice", shedlock.ErrInvalidOption, name)
		}
		l.jobs[name] = durations{lockAtMostFor, lockAtLeastFor}
		return nil
	}
}

// The default bounds of a Locker's statements.
const (
	// DefaultLockTimeout bounds each take of a lock (Locker.Lock), unless
	// WithLockTimeout says otherwise.
	DefaultLockTimeout = 10 * time.Second
	// DefaultUnlockTimeout bounds each release, unless WithUnlockTimeout says
	// otherwise.
	DefaultUnlockTimeout = 10 * time.Second
)

// WithLockTimeout bounds each take of a lock (default DefaultLockTimeout): a
// store that does not answer in time is an error, logged, and gocron skips
// the run. A job context gocron ends sooner ends the take sooner.
func WithLockTimeout(d time.Duration) Option {
	return func(l *Locker) error {
		if d <= 0 {
			return fmt.Errorf("%w: shedlockgocron.WithLockTimeout(%v): must be > 0", shedlock.ErrInvalidOption, d)
		}
		l.lockWait = d
		return nil
	}
}

// WithUnlockTimeout bounds each release (default DefaultUnlockTimeout).
func WithUnlockTimeout(d time.Duration) Option {
	return func(l *Locker) error {
		if d <= 0 {
			return fmt.Errorf("%w: shedlockgocron.WithUnlockTimeout(%v): must be > 0", shedlock.ErrInvalidOption, d)
		}
		l.timeout = d
		return nil
	}
}

// WithLogger sets where the Locker logs skipped runs (debug), store failures and
// failed releases (error). Default: slog.Default().
func WithLogger(log *slog.Logger) Option {
	return func(l *Locker) error {
		if log == nil {
			return fmt.Errorf("%w: shedlockgocron.WithLogger: nil logger", shedlock.ErrInvalidOption)
		}
		l.log = log
		return nil
	}
}
