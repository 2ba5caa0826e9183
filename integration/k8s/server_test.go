// Package k8s_test runs shedlockk8s against a real kube-apiserver, built from
// the Go module proxy and started on loopback against a private etcd
// (internal/testkit/kubeapiserver): the conformance suite, writes whose answer
// is lost, RBAC's refusals, Admin, CatchUp, the Leader, pods killed and
// stopped and the API server restarted, and client-go's LeaderElector beside
// shedlock.Leader.
package k8s_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlockk8s"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// namespace is where the shared server's locks live; kubeapiserver.Locker is
// allowed exactly shedlockk8s.Verbs on its Leases.
const namespace = "shedlock"

// shared is the server most tests use; tests that restart it or stop
// processes start their own.
var shared struct {
	once sync.Once
	s    *kubeapiserver.Server
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(worker(spec))
	}
	code := m.Run()
	if shared.s != nil {
		_ = shared.s.Close()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedServer returns the shared server, started at first use, with the
// namespace and Locker's Role.
func sharedServer(t testing.TB) *kubeapiserver.Server {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp(shmDir(), "shedlock-kube-")
		if shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // the first run builds
		defer cancel()
		if shared.s, shared.err = kubeapiserver.Start(ctx, shared.dir); shared.err != nil {
			return
		}
		shared.err = prepareNamespace(ctx, shared.s, namespace)
	})
	if shared.err != nil {
		t.Fatalf("kube-apiserver: %v", shared.err)
	}
	return shared.s
}

// prepareNamespace creates ns and grants Locker the provider's verbs there.
func prepareNamespace(ctx context.Context, s *kubeapiserver.Server, ns string) error {
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	return s.Grant(ctx, ns, kubeapiserver.Locker, "coordination.k8s.io", "leases", shedlockk8s.Verbs...)
}

// shmDir is /dev/shm where there is one (etcd's syncs cost no disk write
// there), else the default temporary directory.
func shmDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return ""
}

// restConfig is the client configuration of user on s, without client-side
// rate limiting (client-go's default, 5 requests a second, would throttle
// the tests, not the server); wrap, if not nil, wraps its transport.
func restConfig(s *kubeapiserver.Server, user string, wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     s.Token(user),
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData},
		QPS:             -1,
		Timeout:         10 * time.Second,
		WrapTransport:   wrap,
	}
}

// newClient returns a clientset of user on s.
func newClient(t testing.TB, s *kubeapiserver.Server, user string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(restConfig(s, user, nil))
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return c
}

// newEnv returns an env no other test uses, so that tests share a namespace
// without meeting.
func newEnv() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:])
}

func newProvider(t testing.TB, c kubernetes.Interface, ns, env, owner string) *shedlockk8s.Provider {
	t.Helper()
	p, err := shedlockk8s.NewProvider(c, ns, shedlockk8s.WithEnv(env), shedlockk8s.WithLockedBy(owner))
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	return p
}

// newStore is the conformance suite's store: an env of its own in the shared
// namespace, a client of Locker's of its own per provider.
func newStore(t *testing.T) shedlocktest.NewProviderFunc {
	s := sharedServer(t)
	env := newEnv()
	var n atomic.Int64
	return func(t *testing.T) shedlock.LockProvider {
		return newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, fmt.Sprintf("pod-%d", n.Add(1)))
	}
}

func TestConformance(t *testing.T) {
	shedlocktest.Run(t, newStore)
}

func TestContention(t *testing.T) {
	shedlocktest.RunContention(t, newStore, shedlocktest.Contention{})
}

func TestCatchUp(t *testing.T) {
	shedlocktest.RunCatchUp(t, newStore)
}
