package shedlocktest_test

import (
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestMemoryStoreCatchUp(t *testing.T) {
	shedlocktest.RunCatchUp(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		s := shedlocktest.NewMemoryStore()
		return func(t *testing.T) shedlock.LockProvider { return s.Provider(t.Name()) }
	})
}
