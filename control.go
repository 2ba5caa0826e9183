package shedlock

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock/internal/control"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// ErrPaused is returned by TryLock for a job an operator paused (see
// Controller). It wraps ErrNotAcquired: code that skips a held lock skips a
// paused one too. The store decides it inside the acquiring statement.
var ErrPaused = lockerr.Paused

// Controller is implemented by a store whose jobs an operator can steer on
// every instance at once: the SQL providers, shedlockredis and shedlocketcd.
// What it writes lives beside the lock, in the store, so that every pod sees
// it at its next attempt; none of it is ever a far-future lock end.
type Controller interface {
	// Pause stops the job of this name on every instance until until, or
	// until Resume when until is zero: each attempt is refused with ErrPaused,
	// decided by the acquiring statement itself. A run under way goes on.
	Pause(ctx context.Context, name string, until time.Time) error
	// Resume ends a pause; a name that is not paused is no error.
	Resume(ctx context.Context, name string) error
	// RunNow asks for one run of the job, on whichever instance checks first
	// (see RunRequester), and returns how many runs are asked for and not yet
	// run. Each call is one run: two calls are two runs.
	RunNow(ctx context.Context, name string) (pending int64, err error)
}

// RunRequester is implemented by a store that keeps run-now requests
// (Controller.RunNow). An executor with jobs on it asks every
// WithRunNowCheck interval which of its names have one, runs such a job under
// its lock as at a fire time, and marks one request run once the task
// returned: a pod killed mid-run leaves the request for another.
type RunRequester interface {
	// RunRequests returns, for those of names with requests not yet run, how
	// many there are. One statement (or round trip) for all the names.
	RunRequests(ctx context.Context, names []string) (map[string]int64, error)
	// RunDone marks one request of name run, if one is left; held is the lock
	// the run took, so that only a run that still holds it counts.
	RunDone(ctx context.Context, name string, held Lock) error
}

// Control is a job's pause and run-now state as the store keeps it: Paused,
// PausedUntil (zero while paused until Resume) and RunRequests (runs asked for
// and not yet run). LockInfo carries it.
type Control = control.Control
