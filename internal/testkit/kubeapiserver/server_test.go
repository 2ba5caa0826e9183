package kubeapiserver_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// The server serves Leases, refuses a verb RBAC does not grant, answers a
// stale resourceVersion with a conflict, and comes back after a restart.
func TestServer(t *testing.T) {
	s := kubeapiserver.New(t)
	ctx := context.Background()
	const ns = "testkit"
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, ns, kubeapiserver.Locker, "coordination.k8s.io", "leases", "get", "create"); err != nil {
		t.Fatal(err)
	}
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	lease := []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}`)
	if _, err := s.DoAs(ctx, kubeapiserver.Locker, http.MethodPost, leases, lease); err != nil {
		t.Fatalf("create as Locker: %v", err)
	}
	stale := []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","resourceVersion":"1"},"spec":{"holderIdentity":"b"}}`)
	var se *kubeapiserver.StatusError
	if _, err := s.DoAs(ctx, kubeapiserver.Locker, http.MethodPut, leases+"/l", stale); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Fatalf("update as Locker, who may not: want 403, got %v", err)
	}
	if _, err := s.Do(ctx, http.MethodPut, leases+"/l", stale); !errors.As(err, &se) || se.Code != http.StatusConflict {
		t.Fatalf("update with a stale resourceVersion: want 409, got %v", err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DoAs(ctx, kubeapiserver.Locker, http.MethodGet, leases+"/l", nil); err != nil {
		t.Fatalf("get after a restart: %v", err)
	}
}
