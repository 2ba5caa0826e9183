package shedlocktest_test

import (
	"fmt"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestMemoryStoreContention(t *testing.T) {
	t.Parallel()
	shedlocktest.RunContention(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		s := shedlocktest.NewMemoryStore()
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			n++
			return s.Provider(fmt.Sprintf("pod-%d", n))
		}
	}, shedlocktest.Contention{RunsPerName: 500})
}
