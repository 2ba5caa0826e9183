package k8s_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// shedlock.Leader on Leases: one leader across renewals; a graceful Stop
// hands over within a few retries, to a term with a larger token.
func TestLeader(t *testing.T) {
	s := sharedServer(t)
	env := newEnv()
	newLeader := func(owner string) *shedlock.Leader {
		p := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, owner)
		l, err := shedlock.NewLeader(p, "leader", 3*time.Second,
			shedlock.WithLeaderRetryPeriod(100*time.Millisecond), shedlock.WithLeaderRenewPeriod(time.Second))
		require.NoError(t, err)
		return l
	}
	la, lb := newLeader("a"), newLeader("b")
	la.Start()
	waitFor(t, 10*time.Second, la.IsLeader)
	lb.Start()
	defer func() { _ = lb.Stop(context.Background()) }()
	for range 4 { // renew periods pass; b never leads meanwhile
		require.True(t, la.IsLeader())
		require.False(t, lb.IsLeader())
		time.Sleep(time.Second) // a renew period
	}
	ctxA, _ := la.Context()
	fenceA, ok := shedlock.FenceFromContext(ctxA)
	require.True(t, ok)
	stopped := time.Now()
	require.NoError(t, la.Stop(context.Background()))
	waitFor(t, 10*time.Second, lb.IsLeader)
	t.Logf("b leads %v after a's Stop", time.Since(stopped).Round(time.Millisecond))
	ctxB, _ := lb.Context()
	fenceB, ok := shedlock.FenceFromContext(ctxB)
	require.True(t, ok)
	require.Greater(t, fenceB, fenceA)
}

func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", timeout)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
