package k8s_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// The leaders' parameters: client-go's documented defaults (LeaseDuration
// 15s, RenewDeadline 10s, RetryPeriod 2s), and shedlock.Leader's with the
// same lease (retry 2s, renew a third of the lease).
const (
	electLease = 15 * time.Second
	electRenew = 10 * time.Second
	electRetry = 2 * time.Second
	// leaderWork is how long a leader works before each write, without
	// looking at its leadership: a SIGSTOP most likely lands in it, as in a
	// job's work between its check and its write.
	leaderWork = 200 * time.Millisecond
)

// leaderWorker is a candidate of TestElectors: it campaigns with
// shedlock.Leader on shedlockk8s or with client-go's LeaderElector, and
// while it leads, writes its name into the group's ledger after each
// leaderWork; with shedlock, the write carries the term's token, which the
// API server's fence policy checks. It journals its terms, its writes and
// how many Lease requests it has sent, every second.
func leaderWorker(spec workerSpec, j *journal, stop <-chan struct{}) error {
	var requests atomic.Int64
	c, err := spec.client(&requests, 10*time.Second)
	if err != nil {
		return err
	}
	go func() {
		for {
			j.log(event{Ev: "requests", N: requests.Load()})
			time.Sleep(time.Second) // the journal's period
		}
	}()
	leadership, quit, err := campaign(spec, c, j)
	if err != nil {
		return err
	}
	defer quit()
	ledger := "ledger-" + spec.Kind
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		ctx, fence, leading := leadership()
		if !leading {
			time.Sleep(20 * time.Millisecond) // poll interval
			continue
		}
		_ = ctx
		time.Sleep(leaderWork) // the work, not looking at the leadership
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, _ := fencedPatch(wctx, c, spec.Namespace, ledger, fence, map[string]string{"writer": spec.ID})
		cancel()
		j.log(event{Ev: "write", Fence: fence, Status: st})
		time.Sleep(20 * time.Millisecond) // between writes
	}
}

// campaign starts the worker's candidate and returns how to ask it whether
// it leads (and the term's context and token: 0 for client-go, which has
// none), and how to end the campaign.
func campaign(spec workerSpec, c *kubernetes.Clientset, j *journal) (func() (context.Context, int64, bool), func(), error) {
	if spec.Kind == "shedlock-leader" {
		return campaignShedlock(spec, c, j)
	}
	return campaignClientGo(spec, c, j)
}

func campaignShedlock(spec workerSpec, c *kubernetes.Clientset, j *journal) (func() (context.Context, int64, bool), func(), error) {
	p, err := shedlockk8s.NewProvider(c, spec.Namespace, shedlockk8s.WithEnv(spec.Env), shedlockk8s.WithLockedBy(spec.ID))
	if err != nil {
		return nil, nil, err
	}
	l, err := shedlock.NewLeader(p, "leader", electLease, shedlock.WithLeaderRetryPeriod(electRetry))
	if err != nil {
		return nil, nil, err
	}
	l.Start()
	var term atomic.Pointer[context.Context]
	leadership := func() (context.Context, int64, bool) {
		ctx, leading := l.Context()
		if !leading {
			return nil, 0, false
		}
		fence, _ := shedlock.FenceFromContext(ctx)
		if old := term.Load(); old == nil || *old != ctx {
			term.Store(&ctx)
			j.log(event{Ev: "lead", Fence: fence})
			go func() {
				<-ctx.Done()
				j.log(event{Ev: "unlead", Fence: fence})
			}()
		}
		return ctx, fence, true
	}
	quit := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Stop(ctx)
	}
	return leadership, quit, nil
}

func campaignClientGo(spec workerSpec, c *kubernetes.Clientset, j *journal) (func() (context.Context, int64, bool), func(), error) {
	var term atomic.Pointer[context.Context]
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "leader-client-go", Namespace: spec.Namespace},
		Client:     c.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: spec.ID},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: electLease, RenewDeadline: electRenew, RetryPeriod: electRetry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				term.Store(&ctx)
				j.log(event{Ev: "lead"})
			},
			OnStoppedLeading: func() {
				term.Store(nil)
				j.log(event{Ev: "unlead"})
			},
		},
		Name: "client-go",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("leader elector: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ctx.Err() == nil {
			elector.Run(ctx) // returns when it stops leading: campaign again
		}
	}()
	leadership := func() (context.Context, int64, bool) {
		t := term.Load()
		if t == nil || (*t).Err() != nil {
			return nil, 0, false
		}
		return *t, 0, true
	}
	return leadership, cancel, nil
}
