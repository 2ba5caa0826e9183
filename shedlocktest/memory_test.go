package shedlocktest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestMemoryStore(t *testing.T) {
	shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		s := shedlocktest.NewMemoryStore()
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			n++
			return s.Provider(fmt.Sprintf("pod-%d", n))
		}
	})
}

// slowStart answers its first TryLock late, as a provider's first use, with
// its checks, does on a loaded CI machine.
type slowStart struct {
	shedlock.LockProvider
	started *atomic.Bool
}

func (p slowStart) TryLock(ctx context.Context, c shedlock.LockConfig) (shedlock.Lock, error) {
	if !p.started.Swap(true) {
		time.Sleep(450 * time.Millisecond) // the late answer under test, not synchronisation
	}
	return p.LockProvider.TryLock(ctx, c)
}

// A provider that keeps its promises but answers its first call later than the
// 400ms windows of the timed checks passes: they widen their windows rather
// than fail, since a call that returns after its window closed proves nothing.
func TestMemoryStoreOnASlowMachine(t *testing.T) {
	shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		s := shedlocktest.NewMemoryStore()
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			n++
			return slowStart{s.Provider(fmt.Sprintf("pod-%d", n)), new(atomic.Bool)}
		}
	})
}

func TestMemoryStoreUnknownOutcomes(t *testing.T) {
	shedlocktest.RunUnknownOutcomes(t, func(t *testing.T) shedlocktest.NewFaultyProviderFunc {
		s := shedlocktest.NewMemoryStore()
		var n atomic.Int64
		return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
			return s.FaultyProvider(fmt.Sprintf("pod-%d", n.Add(1)), f)
		}
	})
}
