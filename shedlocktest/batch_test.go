package shedlocktest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// loopBatch is a BatchLocker the plain way: TryLock per config, which keeps
// the batch contract, so that Run's batch checks run here too.
type loopBatch struct{ shedlock.LockProvider }

func (p loopBatch) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	seen := map[string]bool{}
	for _, c := range cfgs {
		if seen[c.Name] {
			return nil, fmt.Errorf("%w: lock %q twice in one batch", shedlock.ErrInvalidConfig, c.Name)
		}
		seen[c.Name] = true
	}
	res := make([]shedlock.LockResult, len(cfgs))
	for i, c := range cfgs {
		res[i].Lock, res[i].Err = p.TryLock(ctx, c)
	}
	return res, nil
}

func TestMemoryStoreBatch(t *testing.T) {
	shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		s := shedlocktest.NewMemoryStore()
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			n++
			return loopBatch{s.Provider(fmt.Sprintf("pod-%d", n))}
		}
	})
}
