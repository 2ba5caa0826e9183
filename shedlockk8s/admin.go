package shedlockk8s

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shedlock-go/shedlock"
)

// Locks returns every lock of the provider's env, by name: the Leases of its
// namespace labelled with its env (LabelEnv), held or not. Held and TimeLeft
// are this provider's view, as its TryLock would see them (see Inspect).
func (p *Provider) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	list, err := p.leases.List(ctx, metav1.ListOptions{LabelSelector: LabelEnv + "=" + p.env})
	if err != nil {
		return nil, p.requestError("list", "", err)
	}
	infos := make([]shedlock.LockInfo, 0, len(list.Items))
	for i := range list.Items {
		l := &list.Items[i]
		if stateOf(l).name == "" || l.Name != p.LeaseName(stateOf(l).name) {
			continue // not a lock of this env's, though labelled so
		}
		infos = append(infos, p.info(l, time.Now()))
	}
	slices.SortFunc(infos, func(a, b shedlock.LockInfo) int { return strings.Compare(a.Name, b.Name) })
	return infos, nil
}

// Inspect returns the lock of exactly this name; ErrLockNotFound when it has
// no Lease (it was never taken in this env). A Lease is held while it has a
// hold left by this provider's clock: a version it sees for the first time is
// held for its whole hold from now, as TryLock would find it; LockUntil is
// that end on this process's clock. No API server's clock is read.
func (p *Provider) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	cur, err := p.get(ctx, name)
	if err != nil {
		return shedlock.LockInfo{}, err
	}
	return p.info(cur, time.Now()), nil
}

// ForceUnlock frees the lock of exactly this name whoever holds it, and
// returns the lock as it was just before; ErrLockNotFound when it has no
// Lease. It writes the Lease without a holder, with no hold left and
// shedlock.ForceUnlockedBy as its acquisition, by an update guarded by the
// version it read (read again if another write came first), so that the
// holder's next Unlock or Extend finds it another's and returns ErrLockLost.
// The caution of shedlock.Admin applies: only for a holder known to be dead.
func (p *Provider) ForceUnlock(ctx context.Context, name string) (shedlock.LockInfo, error) {
	return p.forceUnlock(ctx, name, nil)
}

// ForceUnlockSeen frees the lock of seen.Name only while its Lease holds the
// acquisition seen shows (the same LockedBy and LockedAt), by an update guarded
// by the version read: another acquisition is an error wrapping
// ErrLockChanged, and nothing is written.
func (p *Provider) ForceUnlockSeen(ctx context.Context, seen shedlock.LockInfo) (shedlock.LockInfo, error) {
	return p.forceUnlock(ctx, seen.Name, func(info shedlock.LockInfo) error {
		if info.LockedBy != seen.LockedBy || !info.LockedAt.Equal(seen.LockedAt) {
			return fmt.Errorf("%w: lock %q is now held by %s", shedlock.ErrLockChanged, seen.Name, info.LockedBy)
		}
		return nil
	})
}

// forceTries bounds how often a forced unlock reads the Lease again after
// another write came first.
const forceTries = 10

func (p *Provider) forceUnlock(ctx context.Context, name string, same func(shedlock.LockInfo) error) (shedlock.LockInfo, error) {
	for try := 1; ; try++ {
		cur, err := p.get(ctx, name)
		if err != nil {
			return shedlock.LockInfo{}, err
		}
		info := p.info(cur, time.Now())
		if same != nil {
			if err := same(info); err != nil {
				return info, err
			}
		}
		w := prepare(cur, cur.Name, p.env, name)
		w.Annotations[AnnotationAcquisition] = shedlock.ForceUnlockedBy
		w.Spec.HolderIdentity = nil
		setHold(w, 0)
		_, err = p.leases.Update(ctx, w, metav1.UpdateOptions{})
		if err == nil {
			return info, nil
		}
		if !apierrors.IsConflict(err) || try == forceTries {
			return shedlock.LockInfo{}, p.requestError("update", name, err)
		}
	}
}

// HealthCheck reports whether the API server answers and lets this identity
// use the Leases: the first call checks every verb the provider needs
// (CheckAccess); every call then sends a dry-run create of a Lease, which
// goes through authentication, authorization, admission and the storage's
// read of etcd, and changes nothing.
func (p *Provider) HealthCheck(ctx context.Context) error {
	if err := p.checkedAccess(ctx); err != nil {
		return err
	}
	probe := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseNamePrefix + "health-check"}}
	_, err := p.leases.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shedlock: health check: %w", p.requestError("create", "", err))
	}
	return nil
}

// EnsureTable creates nothing (a lock's Lease is created at its first
// acquisition): it checks that this identity may use every verb the provider
// needs on the Leases of its namespace (CheckAccess).
func (p *Provider) EnsureTable(ctx context.Context) error { return p.CheckAccess(ctx) }

// get reads the Lease of lock name; ErrLockNotFound when there is none.
func (p *Provider) get(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	lease := p.LeaseName(name)
	cur, err := p.leases.Get(ctx, lease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && stateOf(cur).name != name) {
		return nil, fmt.Errorf("%w: %q in env %s (no Lease %s/%s: it was never taken)",
			shedlock.ErrLockNotFound, name, p.env, p.namespace, lease)
	}
	if err != nil {
		return nil, p.requestError("get", name, err)
	}
	return cur, nil
}

// info is the lock a Lease version read at now shows, as this provider times it.
func (p *Provider) info(l *coordinationv1.Lease, now time.Time) shedlock.LockInfo {
	st := stateOf(l)
	// The holder while held (another writer's, such as a LeaderElector's, may
	// sit on this provider's annotations); the last acquisition once free.
	info := shedlock.LockInfo{Name: st.name, LockedBy: st.holder}
	if info.LockedBy == "" {
		info.LockedBy = st.acquisition
	}
	if l.Spec.AcquireTime != nil {
		info.LockedAt = l.Spec.AcquireTime.UTC().Truncate(time.Millisecond)
	}
	first := p.seen.seen(l.Name, l.ResourceVersion, now)
	end := first.Add(st.hold)
	if left := end.Sub(now); left > 0 {
		info.Held, info.TimeLeft = true, left
	}
	info.LockUntil = end.UTC().Truncate(time.Millisecond)
	return info
}
