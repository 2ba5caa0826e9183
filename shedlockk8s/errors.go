package shedlockk8s

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrForbidden is wrapped by every error of a request the API server refused
// for want of an RBAC permission. The message names the verb, the resource
// and the namespace, so that the Role of the pod's service account can be
// fixed: the provider needs the verbs of Verbs on leases.coordination.k8s.io
// in its namespace (see the package doc).
var ErrForbidden = errors.New("shedlockk8s: forbidden")

// Verbs are the RBAC verbs the provider uses on leases.coordination.k8s.io in
// its namespace, every one of which belongs in the Role of the pod's service
// account: get, create and update for the locks, list for Provider.Locks. It
// never deletes a Lease: a free lock is a Lease without a holder, whose
// transitions count and catch-up record stay.
var Verbs = []string{"get", "list", "create", "update"}

// requestError wraps err, the answer to a request of verb on the Lease of
// lock (or on the namespace's Leases, for lock ""), saying what was refused
// when RBAC refused it.
func (p *Provider) requestError(verb, lock string, err error) error {
	what := "the leases"
	if lock != "" {
		what = fmt.Sprintf("lock %q", lock)
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w: %s: the API server refused the verb %q on leases.coordination.k8s.io "+
			"in namespace %q; add it to the Role bound to this pod's service account (needed: %v): %w",
			ErrForbidden, what, verb, p.namespace, Verbs, err)
	}
	return fmt.Errorf("shedlock: %s %s: %w", verb, what, err)
}
