package shedlockk8s

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// accessCheck remembers that the provider's identity was found allowed every
// verb it needs, so that HealthCheck asks once.
type accessCheck struct {
	mu     sync.Mutex
	passed bool
}

// CheckAccess asks the API server (SelfSubjectAccessReview, which every
// authenticated identity may send) whether the provider's identity may use
// each of Verbs on the Leases of its namespace. An identity that lacks some is
// an error wrapping ErrForbidden that names them. EnsureTable and the first
// HealthCheck call it.
func (p *Provider) CheckAccess(ctx context.Context) error {
	var missing []string
	for _, verb := range Verbs {
		review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{
				Namespace: p.namespace, Verb: verb, Group: "coordination.k8s.io", Resource: "leases",
			},
		}}
		got, err := p.reviews.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("shedlock: check access to the leases of namespace %q: %w", p.namespace, err)
		}
		if !got.Status.Allowed {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the API server does not allow the verbs %s on leases.coordination.k8s.io in namespace %q "+
			"to this identity; add them to the Role bound to this pod's service account (needed: %v)",
			ErrForbidden, strings.Join(missing, ", "), p.namespace, Verbs)
	}
	p.access.mu.Lock()
	p.access.passed = true
	p.access.mu.Unlock()
	return nil
}

// checkedAccess runs CheckAccess unless it has passed.
func (p *Provider) checkedAccess(ctx context.Context) error {
	p.access.mu.Lock()
	passed := p.access.passed
	p.access.mu.Unlock()
	if passed {
		return nil
	}
	return p.CheckAccess(ctx)
}
