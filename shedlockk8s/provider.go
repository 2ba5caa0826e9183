package shedlockk8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/apply"
	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// Provider takes locks in coordination.k8s.io/v1 Leases of one namespace, one
// Lease per lock name. It is safe for concurrent use. Besides the Leases'
// versions it has seen (a few bytes per name), it keeps no state per name.
type Provider struct {
	leases    coordinationv1client.LeaseInterface
	reviews   authorizationv1.SelfSubjectAccessReviewInterface
	namespace string
	env       string
	lockedBy  string
	prefix    string // <lockedBy>#<token of this provider>.
	seq       atomic.Uint64
	seen      observations
	access    accessCheck
}

var (
	_ shedlock.LockProvider  = (*Provider)(nil)
	_ shedlock.ConfigChecker = (*Provider)(nil)
	_ shedlock.Admin         = (*Provider)(nil)
	_ shedlock.FireLocker    = (*Provider)(nil)
)

// NewProvider returns a provider on client that keeps its locks in the Leases
// of namespace. It sends nothing: the API server is first asked at the first
// TryLock, so a service can start while it is down. A nil client, a namespace
// that is not a valid name, a nil option or a bad option's value is an error
// wrapping [shedlock.ErrInvalidOption].
func NewProvider(client kubernetes.Interface, namespace string, opts ...Option) (*Provider, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: shedlockk8s.NewProvider: nil client", shedlock.ErrInvalidOption)
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("%w: shedlockk8s.NewProvider: namespace %q: %s", shedlock.ErrInvalidOption, namespace, errs[0])
	}
	o := options{env: DefaultEnv}
	if err := apply.Options("shedlockk8s.NewProvider", &o, opts); err != nil {
		return nil, err
	}
	if o.lockedBy == "" {
		o.lockedBy = kvstore.HostName()
	}
	var token [6]byte
	_, _ = rand.Read(token[:]) // crypto/rand.Read never fails on supported platforms
	return &Provider{
		leases:    client.CoordinationV1().Leases(namespace),
		reviews:   client.AuthorizationV1().SelfSubjectAccessReviews(),
		namespace: namespace,
		env:       o.env,
		lockedBy:  o.lockedBy,
		prefix:    o.lockedBy + "#" + hex.EncodeToString(token[:]) + ".",
	}, nil
}

// Namespace returns the namespace of the provider's Leases.
func (p *Provider) Namespace() string { return p.namespace }

// LockedBy returns the owner this provider writes into its acquisitions.
func (p *Provider) LockedBy() string { return p.lockedBy }

// LeaseName returns the name of the Lease of the lock named name.
func (p *Provider) LeaseName(name string) string { return LeaseName(p.env, name) }

// CheckConfig reports whether cfg is valid; it touches no server.
func (p *Provider) CheckConfig(cfg shedlock.LockConfig) error { return cfg.Validate() }

// TryLock makes one attempt to take cfg's lock: it reads the lock's Lease and,
// if it is free, writes itself in as holder by an update guarded by the
// resourceVersion it read (a create, when there is no Lease): two requests.
// The Lease is free when it has no hold left: none written, or one this
// provider has seen unchanged for its whole length (see the package doc).
// ErrNotAcquired otherwise, or when another pod's write came first. The lock's
// fencing token is the resourceVersion of the acquiring write. An invalid cfg
// is an error wrapping shedlock.ErrInvalidConfig, before any request.
func (p *Provider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return p.TryLockChecked(ctx, cfg, lockcfg.Checked{})
}

// TryLockChecked is TryLock on a config the executor has validated already.
func (p *Provider) TryLockChecked(ctx context.Context, cfg shedlock.LockConfig, _ lockcfg.Checked) (shedlock.Lock, error) {
	l, err := p.acquire(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// acquire takes cfg's lock if its Lease is free and cond (if not nil) holds
// of the Lease's state.
func (p *Provider) acquire(ctx context.Context, cfg shedlock.LockConfig, cond func(state) bool) (*lock, error) {
	name := p.LeaseName(cfg.Name)
	cur, err := p.takeable(ctx, cfg.Name, name, cond)
	if err != nil {
		return nil, err
	}
	acq := p.prefix + strconv.FormatUint(p.seq.Add(1), 36)
	w := prepare(cur, name, p.env, cfg.Name)
	setHolder(w, acq, true)
	setHold(w, cfg.LockAtMostFor)
	sent := time.Now()
	got, err := p.write(ctx, w, cur == nil)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		// Another pod's write came first, or this one was sent twice and the
		// first was applied: the Lease tells which.
		own, err := p.ownVersion(ctx, cfg.Name, name, acq)
		if err != nil {
			return nil, err
		}
		if own == nil || stateOf(own).holder != acq {
			return nil, shedlock.ErrNotAcquired
		}
		got = own
	} else if err != nil {
		return nil, p.requestError(verbOf(cur == nil), cfg.Name, err)
	}
	p.seen.wrote(name, got.ResourceVersion, sent)
	return newLock(p, cfg, name, acq, got, sent), nil
}

// takeable reads the Lease name of lock and returns it (nil when there is
// none) if it is free for this provider and cond (if not nil) holds of it;
// ErrNotAcquired otherwise.
func (p *Provider) takeable(ctx context.Context, lock, name string, cond func(state) bool) (*coordinationv1.Lease, error) {
	cur, err := p.leases.Get(ctx, name, metav1.GetOptions{})
	now := time.Now() // after the answer: the version read was written before
	if apierrors.IsNotFound(err) {
		cur, err = nil, nil
	}
	if err != nil {
		return nil, p.requestError("get", lock, err)
	}
	st := state{lastFire: -1}
	if cur != nil {
		st = stateOf(cur)
		if st.name != "" && st.name != lock {
			return nil, fmt.Errorf("shedlock: lock %q: its Lease %s/%s belongs to lock %q (their names' hashes collide): rename one",
				lock, p.namespace, name, st.name)
		}
		if !p.seen.free(name, cur.ResourceVersion, st.hold, now) {
			return nil, shedlock.ErrNotAcquired
		}
	}
	if cond != nil && !cond(st) {
		return nil, shedlock.ErrNotAcquired
	}
	return cur, nil
}

// write creates w, or updates it guarded by its resourceVersion.
func (p *Provider) write(ctx context.Context, w *coordinationv1.Lease, create bool) (*coordinationv1.Lease, error) {
	if create {
		return p.leases.Create(ctx, w, metav1.CreateOptions{})
	}
	return p.leases.Update(ctx, w, metav1.UpdateOptions{})
}

func verbOf(create bool) string {
	if create {
		return "create"
	}
	return "update"
}

// ownVersion reads the Lease name of lock and returns it if its last
// acquisition is acq; nil if it is another's, or there is no Lease.
func (p *Provider) ownVersion(ctx context.Context, lock, name, acq string) (*coordinationv1.Lease, error) {
	cur, err := p.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, p.requestError("get", lock, err)
	}
	if stateOf(cur).acquisition != acq {
		return nil, nil
	}
	return cur, nil
}
