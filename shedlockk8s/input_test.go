package shedlockk8s_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// refusingTransport answers no request, and counts them: a provider that
// must touch no server sends none.
type refusingTransport struct{ sent *atomic.Int64 }

func (r refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	r.sent.Add(1)
	return nil, errors.New("no server in this test")
}

func offlineClient(t *testing.T) (kubernetes.Interface, *atomic.Int64) {
	t.Helper()
	var sent atomic.Int64
	c, err := kubernetes.NewForConfig(&rest.Config{
		Host:          "https://127.0.0.1:1",
		WrapTransport: func(http.RoundTripper) http.RoundTripper { return refusingTransport{&sent} },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, &sent
}

func TestNewProviderInput(t *testing.T) {
	c, sent := offlineClient(t)
	cases := []struct {
		name   string
		client kubernetes.Interface
		ns     string
		opts   []shedlockk8s.Option
		want   string
	}{
		{"nil client", nil, "jobs", nil, "nil client"},
		{"empty namespace", c, "", nil, `namespace ""`},
		{"bad namespace", c, "Jobs", nil, `namespace "Jobs"`},
		{"empty env", c, "jobs", []shedlockk8s.Option{shedlockk8s.WithEnv("")}, "WithEnv"},
		{"bad env", c, "jobs", []shedlockk8s.Option{shedlockk8s.WithEnv("a b")}, `WithEnv("a b")`},
		{"long env", c, "jobs", []shedlockk8s.Option{shedlockk8s.WithEnv(strings.Repeat("e", 64))}, "WithEnv"},
		{"nil option", c, "jobs", []shedlockk8s.Option{nil}, "option 0 is nil"},
	}
	for _, tc := range cases {
		_, err := shedlockk8s.NewProvider(tc.client, tc.ns, tc.opts...)
		if !errors.Is(err, shedlock.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want ErrInvalidOption with %q, got %v", tc.name, tc.want, err)
		}
	}
	p, err := shedlockk8s.NewProvider(c, "jobs", shedlockk8s.WithEnv("orders.v2"), shedlockk8s.WithLockedBy("pod-a"))
	if err != nil {
		t.Fatal(err)
	}
	if p.LockedBy() != "pod-a" || p.Namespace() != "jobs" || p.LeaseName("x") != shedlockk8s.LeaseName("orders.v2", "x") {
		t.Errorf("provider: owner %q, namespace %q, lease %q", p.LockedBy(), p.Namespace(), p.LeaseName("x"))
	}
	if sent.Load() != 0 {
		t.Errorf("NewProvider sent %d requests, want none", sent.Load())
	}
}

// A config the contract refuses is an error before any request.
func TestInvalidConfigSendsNothing(t *testing.T) {
	c, sent := offlineClient(t)
	p, err := shedlockk8s.NewProvider(c, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []shedlock.LockConfig{
		{Name: "", LockAtMostFor: time.Minute},
		{Name: strings.Repeat("x", 65), LockAtMostFor: time.Minute},
		{Name: "job", LockAtMostFor: 0},
		{Name: "job", LockAtMostFor: time.Second, LockAtLeastFor: time.Minute},
	} {
		if _, err := p.TryLock(context.Background(), cfg); !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("TryLock(%+v): want ErrInvalidConfig, got %v", cfg, err)
		}
		if _, err := p.TryLockFire(context.Background(), cfg, time.Now()); !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("TryLockFire(%+v): want ErrInvalidConfig, got %v", cfg, err)
		}
		if err := p.CheckConfig(cfg); !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("CheckConfig(%+v): want ErrInvalidConfig, got %v", cfg, err)
		}
	}
	if _, err := p.TryLockFire(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, time.Unix(-1, 0)); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("TryLockFire before 1970: want ErrInvalidConfig, got %v", err)
	}
	if sent.Load() != 0 {
		t.Errorf("%d requests sent for configs refused before any", sent.Load())
	}
}
