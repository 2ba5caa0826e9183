package k8s_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlockk8s"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// An owner the API server cannot keep as written (not UTF-8, or longer than
// annotations may be) would make every acquisition's annotation differ from
// what the provider compares it with, so that a write whose answer was lost
// looks another's: WithLockedBy refuses it, as shedlock.WithLockedBy does.
func TestOwnerKeptAsWritten(t *testing.T) {
	for _, owner := range []string{"pod-\xff", strings.Repeat("p", 300*1024)} {
		_, err := shedlockk8s.NewProvider(newAdminClientset(sharedServer(t)), namespace, shedlockk8s.WithLockedBy(owner))
		if err == nil {
			// Accepted: then a replayed acquisition must still be found its own.
			s := sharedServer(t)
			f := new(shedlocktest.Faults)
			cfg := restConfig(s, kubeapiserver.Locker, func(rt http.RoundTripper) http.RoundTripper {
				return faultTransport{next: rt, f: f}
			})
			cfg.ContentType = "application/json" // as kubectl and many clients send
			c, cerr := kubernetes.NewForConfig(cfg)
			require.NoError(t, cerr)
			p, perr := shedlockk8s.NewProvider(c, namespace, shedlockk8s.WithEnv(newEnv()), shedlockk8s.WithLockedBy(owner))
			require.NoError(t, perr)
			f.Arm(shedlocktest.Replayed)
			_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
			t.Errorf("WithLockedBy(%.20q) accepted; a replayed acquisition then gives %v", owner, err)
			continue
		}
		require.ErrorIs(t, err, shedlock.ErrInvalidOption, fmt.Sprintf("%.20q", owner))
	}
}
