package shedlocktest_test

import (
	"fmt"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// controlledBatch is a memory provider with loopBatch's TryLockBatch, so that
// RunControl checks a pause in a batch too.
type controlledBatch struct {
	loopBatch
	shedlock.Controller
	shedlock.RunRequester
	shedlock.Admin
	shedlock.FireLocker
}

func TestMemoryStoreControl(t *testing.T) {
	shedlocktest.RunControl(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		s := shedlocktest.NewMemoryStore()
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			n++
			p := s.Provider(fmt.Sprintf("pod-%d", n))
			return controlledBatch{loopBatch{p}, p.(shedlock.Controller), p.(shedlock.RunRequester),
				p.(shedlock.Admin), p.(shedlock.FireLocker)}
		}
	})
}
