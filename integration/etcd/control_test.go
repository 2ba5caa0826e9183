package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// The contract of shedlock.Controller and shedlock.RunRequester: pause,
// resume and run-now, on the shared cluster.
func TestControlConformance(t *testing.T) {
	shedlocktest.RunControl(t, newStore)
}

// callLog records the gRPC methods a client calls.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	l.mu.Lock()
	l.calls = append(l.calls, method[strings.LastIndexByte(method, '/')+1:])
	l.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

// take returns the calls since the last take, and forgets them.
func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := l.calls
	l.calls = nil
	return calls
}

func loggedClient(t *testing.T, c *etcdcluster.Cluster) (*clientv3.Client, *callLog) {
	t.Helper()
	log := &callLog{}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(log.intercept)}})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, log
}

// An attempt on a paused name sends what an attempt on a held one does, one
// transaction among them: the pause is compared inside the acquiring
// transaction, no request more. The same for a fire time.
func TestPauseCostsNoRoundTrip(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli, log := loggedClient(t, c)
	p := newProvider(t, cli, env, "pod")
	operator := newProvider(t, newClient(t, c), env, "operator")
	ctx := context.Background()
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	}
	mustLock(t, operator, cfg("held"))
	if err := operator.Pause(ctx, "paused", time.Time{}); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := operator.Pause(ctx, "paused-until", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	log.take()
	mustNotLock(t, p, cfg("held"))
	held := log.take()
	t.Logf("an attempt on a held name, and on a paused one: %v", held)
	if n := strings.Count(strings.Join(held, " "), "Txn"); n != 1 {
		t.Fatalf("an attempt on a held name: %v; want one transaction", held)
	}
	for _, name := range []string{"paused", "paused-until"} {
		_, err := p.TryLock(ctx, cfg(name))
		if !errors.Is(err, shedlock.ErrPaused) {
			t.Fatalf("TryLock(%q): %v; want ErrPaused", name, err)
		}
		if got := log.take(); !slices.Equal(got, held) {
			t.Fatalf("an attempt on %q: %v; want what one on a held name sends, %v", name, got, held)
		}
		_, err = p.TryLockFire(ctx, cfg(name), time.Now())
		if !errors.Is(err, shedlock.ErrPaused) {
			t.Fatalf("TryLockFire(%q): %v; want ErrPaused", name, err)
		}
		if got := log.take(); !slices.Equal(got, held) {
			t.Fatalf("a fire time's attempt on %q: %v; want what one on a held name sends, %v", name, got, held)
		}
	}
}

// The pause's key: beside the lock's, on a lease for a pause until a time
// and on none until Resume; a pause replaced or resumed leaves no lease
// behind. Its end is also compared as a value, so that a pause ends on time
// though its lease is of whole seconds, at least the cluster's minimum.
func TestPauseKeyAndLease(t *testing.T) {
	c := sharedCluster(t)
	cli := newClient(t, c)
	p := newProvider(t, cli, newEnv(), "operator")
	ctx := context.Background()
	key := p.PausedKey("job")
	if !strings.HasPrefix(key, "shedlock-paused:") || !strings.HasSuffix(key, ":job") {
		t.Fatalf("PausedKey = %q", key)
	}
	read := func() (lease clientv3.LeaseID, ok bool) {
		t.Helper()
		r, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		if len(r.Kvs) == 0 {
			return 0, false
		}
		return clientv3.LeaseID(r.Kvs[0].Lease), true
	}
	leaseLive := func(id clientv3.LeaseID) bool {
		t.Helper()
		r, err := cli.TimeToLive(ctx, id)
		if err != nil {
			t.Fatalf("TimeToLive: %v", err)
		}
		return r.TTL > 0
	}
	if err := p.Pause(ctx, "job", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	first, ok := read()
	if !ok || first == clientv3.NoLease || !leaseLive(first) {
		t.Fatalf("a pause until a time: key %v, lease %x; want it on a live lease", ok, first)
	}
	if err := p.Pause(ctx, "job", time.Time{}); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if id, ok := read(); !ok || id != clientv3.NoLease {
		t.Fatalf("a pause until Resume: key %v, lease %x; want it on none", ok, id)
	}
	if leaseLive(first) {
		t.Fatalf("the lease of the pause replaced is still live")
	}
	if err := p.Pause(ctx, "job", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	second, _ := read()
	if err := p.Resume(ctx, "job"); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if _, ok := read(); ok || leaseLive(second) {
		t.Fatalf("after Resume: key %v, lease live %v; want neither", ok, leaseLive(second))
	}

	// A pause of 300ms is on a lease of at least 2s, the cluster's minimum;
	// it ends at 300ms, while its key is still there.
	for try := range 3 {
		name := fmt.Sprintf("short-%d", try)
		until := time.Now().Add(300 * time.Millisecond)
		if err := p.Pause(ctx, name, until); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		_, took := lockWithin(t, p, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, 10*time.Second)
		if took.Before(until) {
			t.Fatalf("a pause until %v was taken %v before then", until, until.Sub(took))
		}
		if r, err := cli.Get(ctx, p.PausedKey(name)); err != nil || len(r.Kvs) == 1 {
			return // taken while the key and its lease were still there: the end compared as a value
		}
		t.Logf("taken %v after the pause's end, once its lease had ended too: this machine answered too late to tell", took.Sub(until))
	}
	t.Fatal("three pauses of 300ms ended only with their leases")
}
