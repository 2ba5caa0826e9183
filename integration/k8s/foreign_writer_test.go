package k8s_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// startElector runs client-go's LeaderElector at its defaults on the Lease
// lease, and returns a channel closed once it leads; it stops with the test.
func startElector(t *testing.T, c kubernetes.Interface, lease, id string) <-chan struct{} {
	t.Helper()
	leading := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: lease, Namespace: namespace},
			Client:     c.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(leading) },
			OnStoppedLeading: func() {},
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); elector.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return leading
}

func waitLeading(t *testing.T, leading <-chan struct{}) {
	t.Helper()
	select {
	case <-leading:
	case <-time.After(40 * time.Second):
		t.Fatal("the LeaderElector did not lead within 40s")
	}
}

// A LeaderElector given a lock's Lease takes it once it is free, keeping the
// provider's annotations (client-go updates the spec only): the provider's
// hold annotation, written with the last release, is not the elector's hold,
// and another pod must not take the Lease while the elector leads.
func TestElectorOnReleasedLease(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	env := newEnv()
	a := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-a")
	b := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-b")
	l, err := a.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))

	waitLeading(t, startElector(t, newClient(t, s, kubeapiserver.Locker), a.LeaseName("job"), "elector"))
	// Try across the elector's renewals (every 2s): not one try may take it.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		got, err := b.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		if err == nil {
			_ = got.Unlock(ctx)
		}
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "took the Lease from a LeaderElector that leads")
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// A LeaderElector takes a lock's Lease over once its hold has passed; the
// old holder's Unlock must then find it another's, and leave the elector's
// holder in place.
func TestUnlockAfterElectorTookOver(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	a := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, newEnv(), "pod-a")
	l, err := a.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Second})
	require.NoError(t, err)

	waitLeading(t, startElector(t, newClient(t, s, kubeapiserver.Locker), a.LeaseName("job"), "elector"))
	info, err := a.Inspect(ctx, "job")
	require.NoError(t, err)
	require.Equal(t, "elector", info.LockedBy, "Inspect names the holder, not the last acquisition's annotation")
	require.True(t, info.Held)
	require.ErrorIs(t, l.Unlock(ctx), shedlock.ErrLockLost)
	lease, err := newAdminClientset(s).CoordinationV1().Leases(namespace).Get(ctx, a.LeaseName("job"), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.HolderIdentity, "the old holder's Unlock cleared the elector's holder")
	require.Equal(t, "elector", *lease.Spec.HolderIdentity)
}

// A held Lease whose hold annotation was edited into something that is not
// a number of milliseconds is still held for its leaseDurationSeconds: a
// garbled annotation must not free a lock.
func TestGarbledHoldAnnotation(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	env := newEnv()
	a := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-a")
	b := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "pod-b")
	leases := newAdminClientset(s).CoordinationV1().Leases(namespace)
	for _, v := range []string{"sixty seconds", "-5", "60s"} {
		name := "job-" + v
		_, err := a.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
		require.NoError(t, err)
		lease, err := leases.Get(ctx, a.LeaseName(name), metav1.GetOptions{})
		require.NoError(t, err)
		lease.Annotations["shedlock-go.github.io/hold-ms"] = v
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = b.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
		if !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Errorf("hold-ms %q on a held Lease: want ErrNotAcquired, got %v", v, err)
		}
	}
}
