package k8s_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// errNotApplied marks an answer other than 2xx: the server did not apply the
// write, so the fault waits for the next one.
var errNotApplied = errors.New("not applied")

// faultTransport passes every write to a Lease (POST, PUT, DELETE) through
// f, and every other request straight on. It wraps client-go's transport,
// outside its retries, so a fault it sends back is not retried below it.
type faultTransport struct {
	next http.RoundTripper
	f    *shedlocktest.Faults
}

func (t faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || !strings.Contains(req.URL.Path, "/leases") {
		return t.next.RoundTrip(req)
	}
	var resp *http.Response
	err := t.f.Do(req.Context(), func(ctx context.Context) error {
		r := req.Clone(ctx)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return err
			}
			r.Body = body
		}
		got, err := t.next.RoundTrip(r)
		if err != nil {
			return err
		}
		// Read whole, so that a later end of ctx cannot cut the answer.
		b, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil {
			return err
		}
		got.Body = io.NopCloser(bytes.NewReader(b))
		resp = got
		if got.StatusCode/100 != 2 {
			return errNotApplied
		}
		return nil
	})
	if errors.Is(err, errNotApplied) {
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// faultyStore is an env of its own in the shared namespace, and providers
// each with a client of its own whose writes go through their Faults.
func faultyStore(t *testing.T) shedlocktest.NewFaultyProviderFunc {
	s := sharedServer(t)
	env := newEnv()
	var n atomic.Int64
	return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
		cfg := restConfig(s, kubeapiserver.Locker, func(rt http.RoundTripper) http.RoundTripper {
			return faultTransport{next: rt, f: f}
		})
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatalf("clientset: %v", err)
		}
		return newProvider(t, c, namespace, env, fmt.Sprintf("pod-%d", n.Add(1)))
	}
}

func TestUnknownOutcomes(t *testing.T) {
	shedlocktest.RunUnknownOutcomes(t, faultyStore)
}

// The transport strikes the acquiring write, and only it: the caller gets
// the lost answer, and the Lease is held by the acquisition it did not hear
// of, for its LockAtMostFor.
func TestFaultTransportStrikesWrites(t *testing.T) {
	newProvider := faultyStore(t)
	f := new(shedlocktest.Faults)
	a := newProvider(t, f)
	b := newProvider(t, new(shedlocktest.Faults))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	f.Arm(shedlocktest.AnswerLost)
	if l, err := a.TryLock(context.Background(), cfg); !errors.Is(err, shedlocktest.ErrAnswerLost) {
		t.Fatalf("TryLock under AnswerLost: want ErrAnswerLost, got lock=%v err=%v", l != nil, err)
	}
	if f.Fired() != 1 || f.Pending() != 0 {
		t.Fatalf("the fault struck %d writes, %d faults still armed; want 1, 0", f.Fired(), f.Pending())
	}
	if l, err := b.TryLock(context.Background(), cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock by another pod: want ErrNotAcquired, got lock=%v err=%v", l != nil, err)
	}
}
