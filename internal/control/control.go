// Package control holds the pause and run-now state of a job as the stores
// keep it, so that the store packages need not import the root package;
// shedlock.Control is this type.
package control

import "time"

// Control is shedlock.Control: a job's pause and run-now state.
type Control struct {
	// Paused reports whether attempts are refused now, by the store's clock.
	Paused bool
	// PausedUntil is when a pause ends; zero while paused until Resume, or
	// when not paused.
	PausedUntil time.Time
	// RunRequests counts the runs asked for and not yet run.
	RunRequests int64
}
