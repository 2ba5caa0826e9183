package etcd_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
)

// javaPod sends what Java ShedLock's EtcdLockProvider (shedlock-provider-etcd-jetcd)
// sends, request for request: a lease of the seconds until lockAtMostUntil,
// rounded up; a transaction that puts the key with it if the key's version is
// 0, else gets it; the lease revoked when the put was not made. Its release
// revokes the lease, or, with LockAtLeastFor left, grants a lease of it and
// puts the key with it unconditionally, then revokes the first.
type javaPod struct {
	cli *clientv3.Client
	env string
}

type javaLock struct {
	key, value string
	lease      clientv3.LeaseID
	leastUntil time.Time
}

func (j javaPod) key(name string) string { return "shedlock:" + j.env + ":" + name }

func javaSeconds(d time.Duration) int64 { return int64(math.Ceil(float64(d.Milliseconds()) / 1000)) }

func (j javaPod) lock(t testing.TB, name string, most, least time.Duration) (javaLock, bool) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	key, value := j.key(name), "ADDED:"+now.UTC().Format("2006-01-02T15:04:05.000Z")+"@java-host"
	g, err := j.cli.Grant(ctx, javaSeconds(most))
	if err != nil {
		t.Fatalf("java grant: %v", err)
	}
	tr, err := j.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(key), "=", 0)).
		Then(clientv3.OpPut(key, value, clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		t.Fatalf("java txn: %v", err)
	}
	if !tr.Succeeded {
		if _, err := j.cli.Revoke(ctx, g.ID); err != nil {
			t.Fatalf("java revoke: %v", err)
		}
		return javaLock{}, false
	}
	return javaLock{key: key, value: value, lease: g.ID, leastUntil: now.Add(least)}, true
}

// unlock is Java's doUnlock: no check of whose the key is.
func (j javaPod) unlock(t testing.TB, l javaLock) {
	t.Helper()
	ctx := context.Background()
	keep := int64(math.Ceil(float64(time.Until(l.leastUntil).Milliseconds()) / 1000))
	if keep <= 0 {
		_, _ = j.cli.Revoke(ctx, l.lease)
		return
	}
	g, err := j.cli.Grant(ctx, keep)
	if err != nil {
		t.Fatalf("java grant: %v", err)
	}
	if _, err := j.cli.Put(ctx, l.key, l.value, clientv3.WithLease(g.ID)); err != nil {
		t.Fatalf("java put: %v", err)
	}
	_, _ = j.cli.Revoke(ctx, l.lease)
}

func TestJavaKeyExcludesGoAndBack(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	java := javaPod{cli: newClient(t, c), env: env}
	goPod := newProvider(t, newClient(t, c), env, "go-pod")
	cfg := shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute}

	if goPod.Key("report") != java.key("report") {
		t.Fatalf("Go key %q, Java key %q", goPod.Key("report"), java.key("report"))
	}
	jl, ok := java.lock(t, "report", time.Minute, 0)
	if !ok {
		t.Fatal("Java pod did not take a free lock")
	}
	mustNotLock(t, goPod, cfg)
	java.unlock(t, jl)

	gl := mustLock(t, goPod, cfg)
	if _, ok := java.lock(t, "report", time.Minute, 0); ok {
		t.Fatal("Java pod took the lock a Go pod holds")
	}
	if err := gl.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	jl, ok = java.lock(t, "report", time.Minute, 0)
	if !ok {
		t.Fatal("Java pod did not take the lock the Go pod released")
	}
	java.unlock(t, jl)
}

// keyState is what a late release must leave alone.
type keyState struct {
	value       string
	lease       int64
	modRevision int64
	ttl         int64
}

func readKey(t testing.TB, cli *clientv3.Client, key string) keyState {
	t.Helper()
	ctx := context.Background()
	r, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(r.Kvs) == 0 {
		return keyState{}
	}
	kv := r.Kvs[0]
	s := keyState{value: string(kv.Value), lease: kv.Lease, modRevision: kv.ModRevision}
	if kv.Lease != 0 {
		ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil {
			t.Fatalf("ttl %s: %v", key, err)
		}
		s.ttl = ttl.TTL
	}
	return s
}

// A Go pod's release after its lock ran out and another pod took it changes
// nothing of the newer holder's key: not its value, its lease nor its revision.
func TestLateGoReleaseLeavesNewerHolder(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	late := newProvider(t, newClient(t, c), env, "late-pod")
	java := javaPod{cli: newClient(t, c), env: env}
	for _, newer := range []string{"go", "java"} {
		t.Run("newer holder "+newer, func(t *testing.T) {
			name := "job-" + newer
			// LockAtLeastFor 1s: a release would move the key to a lease of its own.
			old := mustLock(t, late, shedlock.LockConfig{Name: name, LockAtMostFor: time.Second, LockAtLeastFor: time.Second})
			switch newer {
			case "go":
				other := newProvider(t, newClient(t, c), env, "newer-pod")
				lockWithin(t, other, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, 10*time.Second)
			case "java":
				deadline := time.Now().Add(10 * time.Second)
				for {
					if _, ok := java.lock(t, name, time.Minute, 0); ok {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("Java pod did not take the expired lock")
					}
					time.Sleep(20 * time.Millisecond) // poll interval
				}
			}
			before := readKey(t, cli, late.Key(name))
			if err := old.Unlock(context.Background()); !errors.Is(err, shedlock.ErrLockLost) {
				t.Fatalf("late Unlock: %v, want ErrLockLost", err)
			}
			if err := old.Extend(context.Background(), time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
				t.Fatalf("Extend after the late Unlock: %v, want ErrLockLost", err)
			}
			after := readKey(t, cli, late.Key(name))
			if after.value != before.value || after.lease != before.lease || after.modRevision != before.modRevision {
				t.Fatalf("late Go release touched the newer holder's key: before %+v, after %+v", before, after)
			}
			if after.ttl < 50 {
				t.Fatalf("the newer holder's lease has %ds left, want its minute", after.ttl)
			}
		})
	}
}

// Java's release is unguarded: after its lock ran out and a Go pod took the
// key, Java's late release with LockAtLeastFor left puts its own value with a
// short lease over the Go pod's key. This is the gap shedlocketcd closes.
func TestLateJavaReleaseOverwritesNewerHolder(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	java := javaPod{cli: newClient(t, c), env: env}
	goPod := newProvider(t, newClient(t, c), env, "go-pod")
	// Java's lock: LockAtMostFor 1s, LockAtLeastFor counted on the Java pod's
	// clock, as Java does; it is still ahead when the late release runs.
	jl, ok := java.lock(t, "job", time.Second, 0)
	if !ok {
		t.Fatal("Java pod did not take a free lock")
	}
	jl.leastUntil = time.Now().Add(time.Hour)
	gl, _ := lockWithin(t, goPod, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, 10*time.Second)
	before := readKey(t, cli, goPod.Key("job"))
	java.unlock(t, jl)
	after := readKey(t, cli, goPod.Key("job"))
	if after.value == before.value || after.lease == before.lease {
		t.Fatalf("Java's late release left the Go pod's key alone (before %+v, after %+v): the gap it shows is gone", before, after)
	}
	// The Go holder finds its lock lost at its next Extend, rather than
	// extending a key that is no longer its own.
	if err := gl.Extend(context.Background(), time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Extend after Java overwrote the key: %v, want ErrLockLost", err)
	}
}
