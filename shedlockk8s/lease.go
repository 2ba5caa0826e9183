package shedlockk8s

import (
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// state is what the provider reads from one version of a Lease.
type state struct {
	name        string        // AnnotationName; "" on a Lease the provider did not write
	acquisition string        // AnnotationAcquisition
	holder      string        // spec.holderIdentity: the acquisition while held, "" once released
	hold        time.Duration // how long this version stays held, from when a pod first sees it
	lastFire    int64         // AnnotationLastFire in milliseconds; -1 when absent
	transitions int32         // spec.leaseTransitions
}

// stateOf reads l. The hold annotation is the provider's own, written with
// the holder of the same version: it counts only while the Lease is free or
// held by the acquisition it names. A Lease held by another writer (client-go's
// elector, which updates the spec and keeps the annotations, or a hand), or
// whose annotation is not a number of milliseconds, is held for its
// leaseDurationSeconds while it has a holder, as client-go's elector reads it.
func stateOf(l *coordinationv1.Lease) state {
	s := state{name: l.Annotations[AnnotationName], acquisition: l.Annotations[AnnotationAcquisition], lastFire: -1}
	if l.Spec.HolderIdentity != nil {
		s.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseTransitions != nil {
		s.transitions = *l.Spec.LeaseTransitions
	}
	ms, err := strconv.ParseInt(l.Annotations[AnnotationHold], 10, 64)
	switch {
	case err == nil && ms >= 0 && (s.holder == "" || s.holder == s.acquisition):
		s.hold = time.Duration(ms) * time.Millisecond
	case s.holder != "" && l.Spec.LeaseDurationSeconds != nil:
		s.hold = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if v, ok := l.Annotations[AnnotationLastFire]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
			s.lastFire = ms
		}
	}
	return s
}

// holdMillis is d in whole milliseconds, rounded up: a hold is never shorter
// than asked.
func holdMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// setHold writes hold into l: the annotation, and spec.leaseDurationSeconds
// rounded up to the second for readers such as kubectl (none for no hold:
// the API refuses 0).
func setHold(l *coordinationv1.Lease, hold time.Duration) {
	ms := holdMillis(hold)
	l.Annotations[AnnotationHold] = strconv.FormatInt(ms, 10)
	l.Spec.LeaseDurationSeconds = nil
	if ms > 0 {
		s := int32(min((ms+999)/1000, 1<<31-1))
		l.Spec.LeaseDurationSeconds = &s
	}
}

// prepare returns a copy of base (nil: a new Lease named name) to write:
// its annotations and label set for the lock named lock in env, and its
// renewTime now (the writer's clock: for people reading it, never compared).
func prepare(base *coordinationv1.Lease, name, env, lock string) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if base == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
	} else {
		l = base.DeepCopy()
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Annotations[AnnotationName] = lock
	l.Labels[LabelEnv] = env
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	return l
}

// setHolder makes l held by acquisition, a new one when taken counts one
// more transition and takes acquireTime now.
func setHolder(l *coordinationv1.Lease, acquisition string, taken bool) {
	l.Annotations[AnnotationAcquisition] = acquisition
	h := acquisition
	l.Spec.HolderIdentity = &h
	if taken {
		var n int32
		if l.Spec.LeaseTransitions != nil {
			n = *l.Spec.LeaseTransitions + 1
		}
		l.Spec.LeaseTransitions = &n
		at := *l.Spec.RenewTime
		l.Spec.AcquireTime = &at
	}
}
