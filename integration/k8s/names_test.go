package k8s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// Names the Lease's name cannot hold (unicode, control characters, the
// longest, names that slug alike) are each a lock of their own, kept whole
// in the annotation; a Lease whose annotation names another lock (a hash
// collision, made here by hand) is an error that names both, and Admin
// leaves it alone.
func TestAwkwardNames(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	env := newEnv()
	a := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "a")
	names := []string{
		"日本語", "中文", "job", "JOB", "job!", "job?", "a\x00b", "a\nb", "\u00a0", "🔒",
		strings.Repeat("é", shedlock.MaxNameLength), strings.Repeat("x", shedlock.MaxNameLength),
		strings.Repeat("x", shedlock.MaxNameLength-1) + "y",
	}
	leases := map[string]string{}
	for _, n := range names {
		_, err := a.TryLock(ctx, shedlock.LockConfig{Name: n, LockAtMostFor: time.Minute})
		require.NoError(t, err, "%q", n)
		info, err := a.Inspect(ctx, n)
		require.NoError(t, err, "%q", n)
		require.Equal(t, n, info.Name)
		require.True(t, info.Held, "%q", n)
		require.NotContains(t, leases, a.LeaseName(n))
		leases[a.LeaseName(n)] = n
	}
	locks, err := a.Locks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, len(names))

	// A collision, by hand: the Lease of "victim" says it is "other"'s.
	admin := newAdminClientset(s).CoordinationV1().Leases(namespace)
	_, err = admin.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name:        a.LeaseName("victim"),
		Labels:      map[string]string{shedlockk8s.LabelEnv: env},
		Annotations: map[string]string{shedlockk8s.AnnotationName: "other"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = a.TryLock(ctx, shedlock.LockConfig{Name: "victim", LockAtMostFor: time.Minute})
	require.ErrorContains(t, err, `belongs to lock "other"`)
	require.ErrorContains(t, err, `lock "victim"`)
	_, err = a.ForceUnlock(ctx, "victim")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)
	locks, err = a.Locks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, len(names), "the collided Lease is no lock of the env")
}
