package shedlockredis_test

import (
	"testing"

	"github.com/shedlock-go/shedlock/shedlocktest"
)

func TestConformance(t *testing.T) {
	shedlocktest.Run(t, newStore)
}

func TestContention(t *testing.T) {
	shedlocktest.RunContention(t, newStore, shedlocktest.Contention{})
}

func TestCatchUpConformance(t *testing.T) {
	shedlocktest.RunCatchUp(t, newStore)
}
