package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
)

// How faultyClient's next transactions fail.
const (
	answerLost = iota + 1 // the cluster applies it; the client gets Unavailable instead of the answer
	answerLate            // the cluster applies it; the answer comes after the caller's deadline
	notApplied            // never sent; the client gets Unavailable, as from a member with no leader
)

// faults makes the next n transactions of a faultyClient fail as mode says.
type faults struct {
	mode atomic.Int32
	left atomic.Int32
}

func (f *faults) arm(mode, n int) { f.mode.Store(int32(mode)); f.left.Store(int32(n)) }

// intercept is a gRPC unary client interceptor that fails transactions
// (KV/Txn) as armed, and passes every other call.
func (f *faults) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method != "/etcdserverpb.KV/Txn" || f.left.Add(-1) < 0 {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	switch f.mode.Load() {
	case notApplied:
		return status.Error(codes.Unavailable, "etcdserver: no leader (injected)")
	case answerLost:
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "connection reset before the answer (injected)")
	case answerLate:
		if err := invoker(context.WithoutCancel(ctx), method, req, reply, cc, opts...); err != nil {
			return err
		}
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// faultyClient returns a client on c whose transactions fail as f is armed.
func faultyClient(t testing.TB, c *etcdcluster.Cluster) (*clientv3.Client, *faults) {
	t.Helper()
	f := &faults{}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(f.intercept)}})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, f
}

// keyHeld reports whether key is present.
func keyHeld(t testing.TB, cli *clientv3.Client, key string) bool {
	t.Helper()
	r, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return len(r.Kvs) == 1
}

// An Extend whose transaction the cluster applied but whose answer was lost
// leaves the key held by its holder: no other pod takes it, the holder's next
// Extend succeeds, and its Unlock frees it.
func TestExtendAnswerLostKeepsLock(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	faultyCli, f := faultyClient(t, c)
	holder := newProvider(t, faultyCli, env, "holder")
	other := newProvider(t, newClient(t, c), env, "other")
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l := mustLock(t, holder, cfg)

	f.arm(answerLost, 1)
	if err := l.Extend(context.Background(), time.Minute, 0); err == nil {
		t.Fatal("Extend: nil, want the injected error")
	}
	if !keyHeld(t, cli, holder.Key("job")) {
		t.Fatal("the key is gone after an Extend whose answer was lost: the lock was freed behind its holder")
	}
	mustNotLock(t, other, cfg)
	if err := l.Extend(context.Background(), time.Minute, 0); err != nil {
		t.Fatalf("the Extend after the lost answer: %v, want nil (the key is still this acquisition's)", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if keyHeld(t, cli, holder.Key("job")) {
		t.Fatal("the key is still there after Unlock")
	}
}

// An Extend answered only after its deadline: the next Extend still finds
// the key this acquisition's, rather than ErrLockLost with nobody holding it.
func TestExtendLateAnswerKeepsLock(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	faultyCli, f := faultyClient(t, c)
	holder := newProvider(t, faultyCli, env, "holder")
	other := newProvider(t, newClient(t, c), env, "other")
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l := mustLock(t, holder, cfg)

	f.arm(answerLate, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := l.Extend(ctx, time.Minute, 0)
	cancel()
	if err == nil {
		t.Fatal("Extend: nil, want the deadline")
	}
	if !keyHeld(t, cli, holder.Key("job")) {
		t.Fatal("the key is gone after a late Extend")
	}
	if err := l.Extend(context.Background(), time.Minute, 0); err != nil {
		t.Fatalf("the Extend after the late answer: %v, want nil", err)
	}
	mustNotLock(t, other, cfg)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	lockWithin(t, other, cfg, 5*time.Second)
}

// A release refused once ("no leader") is sent again: the lock is freed, not
// kept for LockAtMostFor. One applied whose answer was lost is sent again
// too, and reports the release, not ErrLockLost.
func TestReleaseRetried(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	faultyCli, f := faultyClient(t, c)
	holder := newProvider(t, faultyCli, env, "holder")
	for _, tc := range []struct {
		name string
		mode int
	}{{"not applied", notApplied}, {"answer lost", answerLost}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := shedlock.LockConfig{Name: "job-" + tc.name, LockAtMostFor: time.Minute}
			l := mustLock(t, holder, cfg)
			f.arm(tc.mode, 1)
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatalf("Unlock: %v, want nil after a retry", err)
			}
			if f.left.Load() >= 0 {
				t.Fatal("no transaction failed: the fault was not injected")
			}
			if keyHeld(t, cli, holder.Key(cfg.Name)) {
				t.Fatal("the key is still held after Unlock")
			}
		})
	}
}

// Unlock deletes the key once LockAtLeastFor has passed, rather than leaving
// it on the lease of LockAtLeastFor, which the cluster rounds up to its
// minimum TTL.
func TestUnlockAfterLockAtLeastForDeletes(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	p := newProvider(t, newClient(t, c), env, "pod")
	l := mustLock(t, p, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: time.Second})
	time.Sleep(1100 * time.Millisecond) // LockAtLeastFor passes: what is tested is the time, not an event
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if keyHeld(t, cli, p.Key("job")) {
		t.Fatal("the key is still held after LockAtLeastFor passed and Unlock returned")
	}
}

// A Leader whose renewal was applied but whose answer was lost stays the only
// leader: the other instance, campaigning every 100ms, never leads beside it.
func TestLeaderRenewalAnswerLostOneLeader(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	faultyCli, f := faultyClient(t, c)
	a := newProvider(t, faultyCli, env, "a")
	b := newProvider(t, newClient(t, c), env, "b")
	opts := []shedlock.LeaderOption{shedlock.WithLeaderRetryPeriod(100 * time.Millisecond), shedlock.WithLeaderRenewPeriod(time.Second)}
	la, err := shedlock.NewLeader(a, "leader", 3*time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := shedlock.NewLeader(b, "leader", 3*time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	la.Start()
	defer func() { _ = la.Stop(context.Background()) }()
	waitFor(t, 10*time.Second, la.IsLeader)
	lb.Start()
	defer func() { _ = lb.Stop(context.Background()) }()

	f.arm(answerLost, 1) // a's next renewal
	waitFor(t, 10*time.Second, func() bool { return f.left.Load() < 0 })
	// Past a's next renewals and b's campaigns: never both.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		if la.IsLeader() && lb.IsLeader() {
			t.Fatal("a and b both lead after a's renewal lost its answer")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if !la.IsLeader() {
		t.Fatal("a no longer leads, though its lock was never lost")
	}
}
