package faults_test

import (
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Eight pods on a slow network (30ms per request, each pod its own link) keep
// mutual exclusion, and every one of them still gets the lock.
func TestLatencyContention(t *testing.T) {
	r := newRig(t)
	shedlocktest.RunContention(t, func(t *testing.T) shedlocktest.NewProviderFunc {
		return func(t *testing.T) shedlock.LockProvider {
			p := r.pod()
			p.proxy.SetLatency(30 * time.Millisecond)
			return p.provider
		}
	}, shedlocktest.Contention{RunsPerName: 40, Pause: 20 * time.Millisecond})
}
