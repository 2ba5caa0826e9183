package shedlock

import (
	"fmt"
	"log/slog"
	"time"
)

// Leader defaults, beside client-go's leaderelection (LeaseDuration 15 s,
// RenewDeadline 10 s, RetryPeriod 2 s). The lease is NewLeader's argument.
const (
	// DefaultLeaderRetryPeriod is how often a follower tries to take the
	// lease: one statement each. A leader that stops gracefully is replaced
	// within it.
	DefaultLeaderRetryPeriod = 2 * time.Second
	// MinLeaderLease is the shortest lease NewLeader accepts: a few round trips
	// to the store must fit in the margin before its end.
	MinLeaderLease = 100 * time.Millisecond
)

// LeaderOption configures a Leader. A bad value, or a nil option, is an error
// wrapping ErrInvalidOption that NewLeader returns.
type LeaderOption func(*leaderOptions) error

type leaderOptions struct {
	retry, renew time.Duration // renew 0: a third of the lease
	log          *slog.Logger
	listeners    []Listener
}

// WithLeaderRetryPeriod sets how long a follower waits between attempts to take the
// lease, and a leader between attempts to renew it after one failed. Default
// DefaultLeaderRetryPeriod; it must be > 0.
func WithLeaderRetryPeriod(d time.Duration) LeaderOption {
	return func(o *leaderOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithLeaderRetryPeriod(%v): must be > 0", ErrInvalidOption, d)
		}
		o.retry = d
		return nil
	}
}

// WithLeaderRenewPeriod sets how long the leader waits after a renewal before the
// next. Default a third of the lease, as keep-alive does: a leader makes
// about three statements per lease, and a renewal that fails leaves two
// thirds of it for retries. It must be > 0 and leave time before the
// leadership's context ends (the lease less its margin); NewLeader checks.
func WithLeaderRenewPeriod(d time.Duration) LeaderOption {
	return func(o *leaderOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithLeaderRenewPeriod(%v): must be > 0", ErrInvalidOption, d)
		}
		o.renew = d
		return nil
	}
}

// WithLeaderLogger sets where the leader logs terms gained and lost (info and
// warn) and store failures (warn). Default slog.Default(); nil is invalid.
func WithLeaderLogger(l *slog.Logger) LeaderOption {
	return func(o *leaderOptions) error {
		if l == nil {
			return fmt.Errorf("%w: WithLeaderLogger: nil logger", ErrInvalidOption)
		}
		o.log = l
		return nil
	}
}

// WithLeaderListener adds a listener that receives the leader's
// EventLeadershipGained and EventLeadershipLost, as an executor's listeners
// receive its runs' events (see Listener): shedlockprom and shedlockotel turn
// them into a gauge that is 1 while this instance leads. Nil is invalid.
func WithLeaderListener(l Listener) LeaderOption {
	return func(o *leaderOptions) error {
		if l == nil {
			return fmt.Errorf("%w: WithLeaderListener: nil listener", ErrInvalidOption)
		}
		o.listeners = append(o.listeners, l)
		return nil
	}
}

// check validates what NewLeader was given, options applied, and fills
// in the defaults.
func (o *leaderOptions) check(p LockProvider, cfg LockConfig) error {
	if p == nil {
		return fmt.Errorf("%w: NewLeader: nil LockProvider", ErrInvalidOption)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if c, ok := p.(ConfigChecker); ok {
		if err := c.CheckConfig(cfg); err != nil {
			return err
		}
	}
	lease := cfg.LockAtMostFor
	if lease < MinLeaderLease {
		return fmt.Errorf("%w: leader %q: lease %v is under the minimum %v", ErrInvalidConfig, cfg.Name, lease, MinLeaderLease)
	}
	if o.renew == 0 {
		o.renew = keepAliveInterval(lease)
	}
	if hold := lockEnd(time.Time{}, lease).Sub(time.Time{}); o.renew >= hold {
		return fmt.Errorf("%w: leader %q: WithLeaderRenewPeriod(%v) must be under the lease less its margin (%v)",
			ErrInvalidOption, cfg.Name, o.renew, hold)
	}
	return nil
}

// WithRetryPeriod is WithLeaderRetryPeriod.
//
// Deprecated: use WithLeaderRetryPeriod, whose name says it is the Leader's.
func WithRetryPeriod(d time.Duration) LeaderOption { return WithLeaderRetryPeriod(d) }

// WithRenewPeriod is WithLeaderRenewPeriod.
//
// Deprecated: use WithLeaderRenewPeriod, whose name says it is the Leader's.
func WithRenewPeriod(d time.Duration) LeaderOption { return WithLeaderRenewPeriod(d) }
