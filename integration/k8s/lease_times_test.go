package k8s_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// The times written in a Lease are the writer's clock, and no pod compares
// them: a Lease whose renewTime says it ran out an hour ago, or will run for
// another hour, is free to another pod exactly once that pod has seen it
// unchanged for its hold, on its own clock. So a pod whose clock is an hour
// off takes no lock early and holds none late.
func TestLeaseTimesIgnored(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	admin := newAdminClientset(s)
	env := newEnv()
	a := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-a")
	b := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-b")
	const hold = time.Second
	for _, skew := range []time.Duration{-time.Hour, time.Hour} {
		name := "job" + skew.String()
		_, err := a.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: hold}) // never released
		require.NoError(t, err)
		leases := admin.CoordinationV1().Leases(namespace)
		l, err := leases.Get(ctx, a.LeaseName(name), metav1.GetOptions{})
		require.NoError(t, err)
		off := metav1.NewMicroTime(time.Now().Add(skew))
		l.Spec.RenewTime, l.Spec.AcquireTime = &off, &off
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{}) // as a writer whose clock is off by skew
		require.NoError(t, err)

		first := time.Now()
		var took time.Time
		for took.IsZero() {
			_, err := b.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
			switch {
			case err == nil:
				took = time.Now()
			case !errors.Is(err, shedlock.ErrNotAcquired):
				t.Fatal(err)
			case time.Since(first) > hold+10*time.Second:
				t.Fatalf("renewTime %v off: not taken within %v", skew, hold+10*time.Second)
			default:
				time.Sleep(20 * time.Millisecond) // poll interval
			}
		}
		require.GreaterOrEqual(t, took.Sub(first), hold, "renewTime %v off: taken before its hold had passed since it was first seen", skew)
		t.Logf("renewTime %v off: taken %v after it was first seen (hold %v)", skew, took.Sub(first).Round(time.Millisecond), hold)
	}
}
