package k8s_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// A pod whose Role lacks one of the provider's verbs gets an error that
// wraps ErrForbidden and names the verb, from the call that needs it and
// from EnsureTable's check of them all; with the whole Role it works.
func TestRefusedVerb(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	for _, missing := range shedlockk8s.Verbs {
		t.Run(missing, func(t *testing.T) {
			ns := "rbac-" + missing
			require.NoError(t, s.EnsureNamespace(ctx, ns))
			granted := slices.DeleteFunc(slices.Clone(shedlockk8s.Verbs), func(v string) bool { return v == missing })
			user := kubeapiserver.Limited
			require.NoError(t, s.Grant(ctx, ns, user, "coordination.k8s.io", "leases", granted...))
			env := newEnv()
			p := newProvider(t, newClient(t, s, user), ns, env, "pod-a")
			admin := newProvider(t, newClient(t, s, kubeapiserver.Admin), ns, env, "admin")

			err := p.EnsureTable(ctx)
			require.ErrorIs(t, err, shedlockk8s.ErrForbidden)
			assert.Contains(t, err.Error(), "verbs "+missing+" on leases.coordination.k8s.io in namespace \""+ns+"\"")
			require.ErrorIs(t, p.HealthCheck(ctx), shedlockk8s.ErrForbidden)

			err = refusedCall(ctx, t, p, admin, missing)
			t.Log(err)
			require.ErrorIs(t, err, shedlockk8s.ErrForbidden, "the call that needs %q", missing)
			assert.Contains(t, err.Error(), `refused the verb "`+missing+`" on leases.coordination.k8s.io in namespace "`+ns+`"`)
		})
	}
}

// refusedCall makes the call of p that needs verb, and returns its error.
func refusedCall(ctx context.Context, t *testing.T, p, admin *shedlockk8s.Provider, verb string) error {
	t.Helper()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	switch verb {
	case "get", "create":
		_, err := p.TryLock(ctx, cfg) // reads the Lease, and creates it: it does not exist
		return err
	case "update":
		// The Lease exists (created and released by a pod allowed to): the
		// acquisition updates it.
		l, err := admin.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
		_, err = p.TryLock(ctx, cfg)
		return err
	case "list":
		_, err := p.Locks(ctx)
		return err
	}
	t.Fatalf("no call for verb %q", verb)
	return errors.ErrUnsupported
}

// With exactly shedlockk8s.Verbs, every call works: the Role in
// docs/kubernetes.md is enough.
func TestVerbsSuffice(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	p := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, newEnv(), "pod-a")
	require.NoError(t, p.EnsureTable(ctx))
	require.NoError(t, p.HealthCheck(ctx))
	require.NoError(t, p.HealthCheck(ctx))
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, time.Minute, 0))
	locks, err := p.Locks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	require.NoError(t, l.Unlock(ctx))
	_, err = p.ForceUnlock(ctx, "job")
	require.NoError(t, err)
}
