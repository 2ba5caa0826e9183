package bench_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// newEtcdClient starts a private three-member cluster (internal/testkit/etcdcluster)
// for b, its data in memory (see etcdcluster.New), and returns a
// client on it: one gRPC connection, as every client has.
func newEtcdClient(b *testing.B) *clientv3.Client {
	b.Helper()
	c := etcdcluster.New(b, 3)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	return cli
}

// etcdFloor is the least a lock on etcd with a lease can send for one cycle,
// the provider's requests sent directly on the same client: a lease grant, the
// transaction that puts the key with it if absent and the job is not paused
// (its paused key absent, or, nested, holding an end that has passed), the
// transaction that deletes the key if its revision is still the put's, and
// the lease's revocation.
func etcdFloor(cli *clientv3.Client, key, paused string) func(context.Context) error {
	value := "ADDED:2000-01-01T00:00:00.000Z@floor#0.0"
	ttl := shedlocketcd.TTLSeconds(benchMostFor)
	absent := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	unpaused := clientv3.Compare(clientv3.Version(paused), "=", 0)
	del := clientv3.OpDelete(key)
	return func(ctx context.Context) error {
		g, err := cli.Grant(ctx, ttl)
		if err != nil {
			return fmt.Errorf("floor grant: %w", err)
		}
		op := clientv3.OpPut(key, value, clientv3.WithLease(g.ID))
		ended := clientv3.Compare(clientv3.Value(paused), "<", fmt.Sprintf("%019d", time.Now().UnixMilli()+1))
		put, err := cli.Txn(ctx).If(absent, unpaused).Then(op).
			Else(clientv3.OpTxn([]clientv3.Cmp{absent, ended}, []clientv3.Op{op}, []clientv3.Op{clientv3.OpGet(paused)})).Commit()
		if err != nil || !put.Succeeded {
			return fmt.Errorf("floor acquire: %v", err)
		}
		rel, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", put.Header.Revision)).Then(del).Commit()
		if err != nil || !rel.Succeeded {
			return fmt.Errorf("floor release: %v", err)
		}
		if _, err := cli.Revoke(ctx, g.ID); err != nil {
			return fmt.Errorf("floor revoke: %w", err)
		}
		return nil
	}
}

// newEtcdCycleBench puts the library, the executor and the floor on one
// client of one cluster.
func newEtcdCycleBench(b *testing.B) *cycleBench {
	b.Helper()
	cli := newEtcdClient(b)
	p, err := shedlocketcd.NewProvider(cli, shedlocketcd.WithEnv("bench-"+rand.Text()[:8]))
	if err != nil {
		b.Fatal(err)
	}
	return newCycleBench(b, p, etcdFloor(cli, p.Key("floor"), p.PausedKey("floor")))
}

// BenchmarkEtcdCycle measures one uncontended TryLock+Unlock cycle on a
// three-member etcd cluster (library), the same requests sent directly
// (floor), and Executor.Run with an empty task (executor).
func BenchmarkEtcdCycle(b *testing.B) { benchCycles(b, newEtcdCycleBench(b)) }

// BenchmarkEtcdCycleVsFloor reports the library's and the executor's cycle on
// etcd as ratios to the floor measured in the same loop.
func BenchmarkEtcdCycleVsFloor(b *testing.B) { benchVsFloor(b, newEtcdCycleBench(b)) }
