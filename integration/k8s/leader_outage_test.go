package k8s_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// cutTransport fails every write to a Lease without sending it while cut,
// or sends it and drops the answer while lose is set (applied, unheard).
type cutTransport struct {
	next      http.RoundTripper
	cut, lose *atomic.Bool
}

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || !strings.Contains(req.URL.Path, "/leases") {
		return c.next.RoundTrip(req)
	}
	if c.cut.Load() {
		return nil, errors.New("cut: the API server is unreachable")
	}
	resp, err := c.next.RoundTrip(req)
	if err == nil && c.lose.Load() {
		resp.Body.Close()
		return nil, errors.New("cut: the answer was lost")
	}
	return resp, err
}

// A leader whose renewals fail (unsent, or applied with their answers lost)
// ends its term before a follower, timing the Lease on its own clock, can
// take it; the follower's term has a larger token.
func TestLeaderRenewalsFailing(t *testing.T) {
	s := sharedServer(t)
	env := newEnv()
	for _, mode := range []string{"unsent", "answers lost"} {
		t.Run(mode, func(t *testing.T) {
			var cut, lose atomic.Bool
			c, err := kubernetes.NewForConfig(restConfig(s, kubeapiserver.Locker, func(rt http.RoundTripper) http.RoundTripper {
				return cutTransport{next: rt, cut: &cut, lose: &lose}
			}))
			require.NoError(t, err)
			name := "leader-" + strings.ReplaceAll(mode, " ", "-")
			leader, err := shedlock.NewLeader(newProvider(t, c, namespace, env, "a"), name, 3*time.Second,
				shedlock.WithLeaderRetryPeriod(100*time.Millisecond), shedlock.WithLeaderRenewPeriod(time.Second))
			require.NoError(t, err)
			leader.Start()
			defer func() { cut.Store(false); lose.Store(false); _ = leader.Stop(context.Background()) }()
			waitFor(t, 10*time.Second, leader.IsLeader)
			term, _ := leader.Context()
			fenceA, _ := shedlock.FenceFromContext(term)
			var ended atomic.Int64
			context.AfterFunc(term, func() { ended.Store(time.Now().UnixNano()) })

			follower := newProvider(t, newClient(t, s, kubeapiserver.Locker), namespace, env, "b")
			if mode == "unsent" {
				cut.Store(true)
			} else {
				lose.Store(true)
			}
			var l shedlock.Lock
			for deadline := time.Now().Add(30 * time.Second); l == nil; {
				l, err = follower.TryLock(context.Background(), shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
				if err != nil && !errors.Is(err, shedlock.ErrNotAcquired) {
					t.Fatal(err)
				}
				require.True(t, time.Now().Before(deadline), "the follower never took the Lease")
				time.Sleep(20 * time.Millisecond) // poll interval
			}
			took := time.Now()
			require.NotZero(t, ended.Load(), "the follower took the Lease while the old term's context was alive")
			require.True(t, time.Unix(0, ended.Load()).Before(took))
			t.Logf("%s: term ended %v before the follower took the Lease", mode, took.Sub(time.Unix(0, ended.Load())).Round(time.Millisecond))
			fenceB, _ := shedlock.FenceOf(l)
			require.Greater(t, fenceB, fenceA)
		})
	}
}
