// Package retry holds the one retry loop of the stores' releases (the SQL
// engine's, etcd's): a release that failed is sent again a bounded number of
// times, after a wait that doubles, while the caller's context allows. A
// release is idempotent: sent twice, it frees one acquisition.
//
// The store modules import it across module lines: add, never change or
// remove (see package apply).
package retry

import (
	"context"
	"time"
)

// Do calls try until it returns nil, at most 1+retries times, and no more
// once ctx has ended. The wait before the first retry is backoff, doubled
// before each next one; an end of ctx ends it. retrying, unless nil, is told
// each failure that another try follows, and the try's number from 0. Do
// returns try's last error.
func Do(ctx context.Context, retries int, backoff time.Duration, try func() error, retrying func(attempt int, err error)) error {
	wait := backoff
	for attempt := 0; ; attempt++ {
		err := try()
		if err == nil || attempt >= retries || ctx.Err() != nil {
			return err
		}
		if retrying != nil {
			retrying(attempt, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait *= 2
	}
}
