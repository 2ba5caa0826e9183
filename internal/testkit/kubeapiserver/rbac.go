package kubeapiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// EnsureNamespace creates namespace ns unless it exists. (No controller
// manager runs: a namespace is never deleted, only left with the server.)
func (s *Server) EnsureNamespace(ctx context.Context, ns string) error {
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	})
	_, err := s.Do(ctx, http.MethodPost, "/api/v1/namespaces", body)
	if se := (*StatusError)(nil); errors.As(err, &se) && se.Code == http.StatusConflict {
		return nil
	}
	return err
}

// Grant allows user exactly verbs on resource of group (the core group is
// "") in namespace ns, by a Role and a RoleBinding named after user and
// resource, replacing what an earlier Grant of the same pair allowed, and
// waits until the server's authorizer says so.
func (s *Server) Grant(ctx context.Context, ns, user, group, resource string, verbs ...string) error {
	name := user + "-" + resource
	role, _ := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"rules":    []any{map[string]any{"apiGroups": []string{group}, "resources": []string{resource}, "verbs": verbs}},
	})
	binding, _ := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	})
	base := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns
	if err := s.put(ctx, base+"/roles", name, role); err != nil {
		return err
	}
	if err := s.put(ctx, base+"/rolebindings", name, binding); err != nil {
		return err
	}
	return s.waitAllowed(ctx, ns, user, group, resource, verbs)
}

// put creates the object, or replaces it when it exists.
func (s *Server) put(ctx context.Context, collection, name string, body []byte) error {
	_, err := s.Do(ctx, http.MethodPost, collection, body)
	if se := (*StatusError)(nil); errors.As(err, &se) && se.Code == http.StatusConflict {
		_, err = s.Do(ctx, http.MethodPut, collection+"/"+name, body)
	}
	return err
}

// Allowed asks the server whether user may use verb on resource of group in
// namespace ns (a SubjectAccessReview).
func (s *Server) Allowed(ctx context.Context, ns, user, group, resource, verb string) (bool, error) {
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
		"spec": map[string]any{"user": user, "resourceAttributes": map[string]any{
			"namespace": ns, "verb": verb, "group": group, "resource": resource,
		}},
	})
	out, err := s.Do(ctx, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
	if err != nil {
		return false, err
	}
	var review struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &review); err != nil {
		return false, fmt.Errorf("kubeapiserver: access review: %w", err)
	}
	return review.Status.Allowed, nil
}

// waitAllowed polls until user may use every verb: RBAC's authorizer learns
// of a new binding from its informers, a moment after the write.
func (s *Server) waitAllowed(ctx context.Context, ns, user, group, resource string, verbs []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, verb := range verbs {
		for {
			ok, err := s.Allowed(ctx, ns, user, group, resource, verb)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("kubeapiserver: %s is still not allowed to %s %s in %s", user, verb, resource, ns)
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
	}
	return nil
}
