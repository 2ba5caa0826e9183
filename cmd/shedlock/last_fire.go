package main

import (
	"context"
	"errors"
	"time"

	"github.com/shedlock-go/shedlock"
)

// fireReader is a store that can tell the last fire time a CatchUp job's
// run succeeded at (shedlock.CatchUp): every shedlock.FireLocker.
type fireReader interface {
	LastFire(ctx context.Context, name string) (time.Time, bool, error)
}

// lastFires reads, for each lock, the last fire time its CatchUp run
// succeeded at; nil when the store keeps none (a table without last_success)
// or records none, so that a store without CatchUp jobs lists as before.
func lastFires(ctx context.Context, s *store, locks []shedlock.LockInfo) (map[string]time.Time, error) {
	fr, ok := s.Admin.(fireReader)
	if !ok {
		return nil, nil
	}
	fires := map[string]time.Time{}
	for _, l := range locks {
		t, ok, err := fr.LastFire(ctx, l.Name)
		if errors.Is(err, shedlock.ErrUnsafeStore) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if ok {
			fires[l.Name] = t
		}
	}
	if len(fires) == 0 {
		return nil, nil
	}
	return fires, nil
}
