package etcd_test

import (
	"testing"

	"github.com/shedlock-go/shedlock/shedlocktest"
)

// TestUnknownOutcomes runs the kit's unknown-outcome cases on etcd, each write
// struck through the gRPC interceptor of faultyStore.
func TestUnknownOutcomes(t *testing.T) {
	shedlocktest.RunUnknownOutcomes(t, faultyStore)
}
