package k8s_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// revoke grants user every verb of the provider but those, and waits until
// the authorizer refuses them.
func revoke(t *testing.T, s *kubeapiserver.Server, ns, user string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	kept := slices.DeleteFunc(slices.Clone(shedlockk8s.Verbs), func(v string) bool { return slices.Contains(verbs, v) })
	require.NoError(t, s.Grant(ctx, ns, user, "coordination.k8s.io", "leases", kept...))
	for _, v := range verbs {
		waitFor(t, 30*time.Second, func() bool {
			allowed, err := s.Allowed(ctx, ns, user, "coordination.k8s.io", "leases", v)
			require.NoError(t, err)
			return !allowed
		})
	}
}

// A verb taken away while a lock is held: each call that needs it says
// which, wrapping ErrForbidden, Extend, Unlock and the Admin calls alike.
func TestVerbRevokedWhileHeld(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	ns := "rbac-revoked"
	user := kubeapiserver.Limited
	require.NoError(t, s.EnsureNamespace(ctx, ns))
	require.NoError(t, s.Grant(ctx, ns, user, "coordination.k8s.io", "leases", shedlockk8s.Verbs...))
	p := newProvider(t, newClient(t, s, user), ns, newEnv(), "pod-a")
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	names := func(err error, verb string) {
		t.Helper()
		require.ErrorIs(t, err, shedlockk8s.ErrForbidden)
		require.ErrorContains(t, err, `refused the verb "`+verb+`"`)
	}

	revoke(t, s, ns, user, "update")
	names(l.Extend(ctx, time.Minute, 0), "update")
	names(l.Unlock(ctx), "update")
	_, err = p.ForceUnlock(ctx, "job")
	names(err, "update")

	revoke(t, s, ns, user, "get")
	_, err = p.Inspect(ctx, "job")
	names(err, "get")
	_, _, err = p.LastFire(ctx, "job")
	names(err, "get")
	_, err = p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	names(err, "get")
}
