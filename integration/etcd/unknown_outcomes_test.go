package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// etcdWrites are the calls that write a lock's key. Leases are left alone:
// a lease granted whose answer is lost is one no key uses, and it runs out.
var etcdWrites = map[string]bool{
	"/etcdserverpb.KV/Txn":         true,
	"/etcdserverpb.KV/Put":         true,
	"/etcdserverpb.KV/DeleteRange": true,
}

// faultInterceptor passes every write of a lock's key through f. It is the
// client's first interceptor, outside its own retries, so a fault it sends
// back is not retried below it.
func faultInterceptor(f *shedlocktest.Faults) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !etcdWrites[method] {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		return f.Do(ctx, func(ctx context.Context) error { return invoker(ctx, method, req, reply, cc, opts...) })
	}
}

// faultyStore is the shared cluster with an env of its own, and providers
// each with a client of its own whose writes go through their Faults.
func faultyStore(t *testing.T) shedlocktest.NewFaultyProviderFunc {
	c := sharedCluster(t)
	env := newEnv()
	var n atomic.Int64
	return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   c.Endpoints(),
			DialTimeout: 5 * time.Second,
			DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(faultInterceptor(f))},
		})
		if err != nil {
			t.Fatalf("etcd client: %v", err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return newProvider(t, cli, env, fmt.Sprintf("pod-%d", n.Add(1)))
	}
}

// The interceptor strikes the acquiring transaction, and only it: the caller
// gets the lost answer. (The provider then revokes the lease it wrote the key
// with, so the lock is free again at once.)
func TestFaultInterceptorStrikesWrites(t *testing.T) {
	newProvider := faultyStore(t)
	f := new(shedlocktest.Faults)
	a := newProvider(t, f)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	f.Arm(shedlocktest.AnswerLost)
	if l, err := a.TryLock(context.Background(), cfg); !errors.Is(err, shedlocktest.ErrAnswerLost) {
		t.Fatalf("TryLock under AnswerLost: want ErrAnswerLost, got lock=%v err=%v", l != nil, err)
	}
	if f.Fired() != 1 || f.Pending() != 0 {
		t.Fatalf("the fault struck %d writes, %d faults still armed; want 1, 0", f.Fired(), f.Pending())
	}
}
