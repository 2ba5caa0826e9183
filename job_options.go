package shedlock

import "time"

// JobOption configures one job: a Run (through RunWith), a FixedDelay loop or a
// Wrap'ed cron job. It overrides the executor's option of the same purpose.
type JobOption func(*jobOptions) error

type jobOptions struct {
	keepAlive bool
	skew      time.Duration // Schedule's clock skew bound (ClockSkew)
	skewSet   bool

	catchUp      time.Duration // CatchUp's window; 0: off
	catchUpRetry time.Duration // CatchUpRetry; 0: DefaultCatchUpRetry
}

// KeepAlive turns keep-alive on or off for one job, whatever the executor's
// WithKeepAlive says.
func KeepAlive(on bool) JobOption {
	return func(o *jobOptions) error {
		o.keepAlive = on
		return nil
	}
}
