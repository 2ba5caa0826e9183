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
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// takeWhenFree polls p's TryLock until it takes name's lock.
func takeWhenFree(t *testing.T, p *shedlockk8s.Provider, name string, most time.Duration) shedlock.Lock {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: name, LockAtMostFor: most})
		if err == nil {
			return l
		}
		require.ErrorIs(t, err, shedlock.ErrNotAcquired)
		require.True(t, time.Now().Before(deadline), "not taken within 20s")
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// A holder that stood still past its hold (a stopped pod) and resumes finds
// its lock lost and writes nothing over the next holder's; the tokens grow
// across holders, a forced unlock, and a Lease deleted by hand and created
// again; hand edits of the holder or of the annotations never free a held
// Lease early.
func TestStaleHolderAndFences(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	env := newEnv()
	pod := func(owner string) *shedlockk8s.Provider {
		return newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, owner)
	}
	a, b, c := pod("a"), pod("b"), pod("c")
	leases := newAdminClientset(s).CoordinationV1().Leases(namespace)
	fence := func(l shedlock.Lock) int64 { f, ok := shedlock.FenceOf(l); require.True(t, ok); return f }

	stale, err := a.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Second})
	require.NoError(t, err)
	next := takeWhenFree(t, b, "job", time.Minute)
	require.ErrorIs(t, stale.(shedlock.HoldChecker).CheckHeld(), shedlock.ErrLockExpired)
	require.ErrorIs(t, stale.Extend(ctx, time.Minute, 0), shedlock.ErrLockLost)
	require.ErrorIs(t, stale.Unlock(ctx), shedlock.ErrLockLost)
	require.NoError(t, next.Extend(ctx, time.Minute, 0), "the stale holder wrote over the next one")
	require.Greater(t, fence(next), fence(stale))

	_, err = c.ForceUnlock(ctx, "job")
	require.NoError(t, err)
	forced := takeWhenFree(t, c, "job", time.Minute)
	require.Greater(t, fence(forced), fence(next))
	require.ErrorIs(t, next.Unlock(ctx), shedlock.ErrLockLost)

	require.NoError(t, leases.Delete(ctx, c.LeaseName("job"), metav1.DeleteOptions{}))
	recreated := takeWhenFree(t, a, "job", time.Minute)
	require.Greater(t, fence(recreated), fence(forced))
	require.ErrorIs(t, forced.Extend(ctx, time.Minute, 0), shedlock.ErrLockLost)

	// Hand edits of a held Lease: each leaves it held for b.
	edits := map[string]func(map[string]string, *string) *string{
		"holder removed":       func(map[string]string, *string) *string { return nil },
		"holder changed":       func(map[string]string, *string) *string { h := "someone"; return &h },
		"acquisition changed":  func(an map[string]string, h *string) *string { an[shedlockk8s.AnnotationAcquisition] = "x"; return h },
		"annotations removed":  func(an map[string]string, h *string) *string { clear(an); return h },
		"hold annotation gone": func(an map[string]string, h *string) *string { delete(an, shedlockk8s.AnnotationHold); return h },
	}
	for what, edit := range edits {
		name := "edited " + what
		held, err := a.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
		require.NoError(t, err)
		lease, err := leases.Get(ctx, a.LeaseName(name), metav1.GetOptions{})
		require.NoError(t, err)
		lease.Spec.HolderIdentity = edit(lease.Annotations, lease.Spec.HolderIdentity)
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		require.NoError(t, err)
		if _, err := b.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}); !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Errorf("%s: another pod's TryLock: want ErrNotAcquired, got %v", what, err)
		}
		// An edit that keeps holder and acquisition keeps the lock its holder's.
		err = held.Extend(ctx, time.Minute, 0)
		if keeps := what == "hold annotation gone"; keeps && err != nil || !keeps && !errors.Is(err, shedlock.ErrLockLost) {
			t.Errorf("%s: the holder's Extend: got %v", what, err)
		}
	}
}
