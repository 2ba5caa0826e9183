package shedlockgocron

import (
	"context"
	"fmt"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
)

// NewElector returns a gocron.Elector on l: a scheduler given it
// (gocron.WithDistributedElector) runs its jobs only while l leads. l must be
// started (shedlock.Leader.Start) for the instance ever to lead.
//
// gocron asks before each run and gives the job no context of the elector's:
// a job that must stop when the leadership ends takes l.Context() itself, and
// passes FenceFromContext's token with its writes. Asking costs no statement.
//
// A nil l gives an elector that never leads, with an error wrapping
// shedlock.ErrInvalidOption (the signature has no error to return).
func NewElector(l *shedlock.Leader) gocron.Elector { return elector{l} }

type elector struct{ l *shedlock.Leader }

// IsLeader returns nil while the leader leads, else an error wrapping
// shedlock.ErrNotLeader, so that gocron skips the run.
func (e elector) IsLeader(context.Context) error {
	if e.l == nil {
		return fmt.Errorf("%w: shedlockgocron.NewElector: nil leader", shedlock.ErrInvalidOption)
	}
	if !e.l.IsLeader() {
		return shedlock.ErrNotLeader
	}
	return nil
}
