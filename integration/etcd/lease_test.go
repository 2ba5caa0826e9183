package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// The fencing token is the revision that created the key: larger for every
// later acquisition, of this name or any other, by any pod on the cluster.
func TestFenceIsTheKeysRevision(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	a := newProvider(t, newClient(t, c), env, "a")
	b := newProvider(t, newClient(t, c), env, "b")
	var last int64
	for i, p := range []*shedlocketcd.Provider{a, b, a, b} {
		name := []string{"x", "y"}[i%2]
		l := mustLock(t, p, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
		fence, ok := shedlock.FenceOf(l)
		if !ok {
			t.Fatal("no fencing token")
		}
		r, err := cli.Get(context.Background(), p.Key(name))
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("get: %v %v", r, err)
		}
		if got := r.Kvs[0].CreateRevision; got != fence {
			t.Fatalf("fence %d, the key's create revision %d", fence, got)
		}
		if fence <= last {
			t.Fatalf("acquisition %d: fence %d, not above the last %d", i, fence, last)
		}
		last = fence
		if err := l.Extend(context.Background(), time.Minute, 0); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if f, _ := shedlock.FenceOf(l); f != fence {
			t.Fatalf("Extend changed the fence from %d to %d", fence, f)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
}

// A lock whose holder's session died (its client gone, never released) is
// free within LockAtMostFor rounded up to the second, and not before
// LockAtMostFor.
func TestDeadHolderFreeWithinRoundedLease(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	holderCli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	holder := newProvider(t, holderCli, env, "holder")
	other := newProvider(t, newClient(t, c), env, "other")
	const most = 2500 * time.Millisecond
	rounded := time.Duration(shedlocketcd.TTLSeconds(most)) * time.Second
	start := time.Now()
	mustLock(t, holder, shedlock.LockConfig{Name: "job", LockAtMostFor: most})
	_ = holderCli.Close() // the session dies: nothing more is sent
	_, at := lockWithin(t, other, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, 30*time.Second)
	took := at.Sub(start)
	// The leader looks for ended leases every 500ms and revokes them through
	// consensus: a margin of a second beyond the rounded TTL.
	if took < most || took > rounded+time.Second {
		t.Fatalf("the dead holder's lock was free after %v, want between LockAtMostFor %v and %v rounded up (+1s)", took, most, rounded)
	}
	t.Logf("dead holder's lock (LockAtMostFor %v, lease %v) free after %v", most, rounded, took)
}

// Unlock with LockAtLeastFor left moves the key to the lease granted for it at
// the acquisition, counted by the cluster: the lock is kept, then ends.
func TestLockAtLeastForKeptByItsLease(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	a := newProvider(t, newClient(t, c), env, "a")
	b := newProvider(t, newClient(t, c), env, "b")
	const least = 3 * time.Second
	start := time.Now()
	l := mustLock(t, a, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: least})
	mostLease := readKey(t, cli, a.Key("job")).lease
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	k := readKey(t, cli, a.Key("job"))
	if k.lease == 0 || k.lease == mostLease || k.ttl > 3 {
		t.Fatalf("after Unlock the key is %+v, want it on the 3s lease of LockAtLeastFor (was on %d)", k, mostLease)
	}
	if ttl, err := cli.TimeToLive(context.Background(), clientv3.LeaseID(mostLease)); err != nil || ttl.TTL != -1 {
		t.Fatalf("the lease of LockAtMostFor after Unlock: %+v %v, want revoked", ttl, err)
	}
	mustNotLock(t, b, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	_, at := lockWithin(t, b, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, 30*time.Second)
	if took := at.Sub(start); took < least || took > least+2*time.Second {
		t.Fatalf("released lock taken again after %v, want LockAtLeastFor %v (+2s)", took, least)
	}
}

// Extend moves the key to a new lease and revokes the old; a key deleted
// behind the holder's back makes Extend and Unlock ErrLockLost.
func TestExtendMovesToNewLease(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	cli := newClient(t, c)
	a := newProvider(t, newClient(t, c), env, "a")
	l := mustLock(t, a, shedlock.LockConfig{Name: "job", LockAtMostFor: 5 * time.Second})
	first := readKey(t, cli, a.Key("job"))
	if err := l.Extend(context.Background(), time.Minute, 0); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	second := readKey(t, cli, a.Key("job"))
	if second.lease == first.lease || second.ttl < 50 || second.value != first.value {
		t.Fatalf("after Extend the key is %+v (was %+v), want the same value on a minute's lease", second, first)
	}
	if ttl, _ := cli.TimeToLive(context.Background(), clientv3.LeaseID(first.lease)); ttl == nil || ttl.TTL != -1 {
		t.Fatalf("the old lease after Extend: %+v, want revoked", ttl)
	}
	if _, err := a.ForceUnlock(context.Background(), "job"); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	if err := l.Extend(context.Background(), time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Extend after a forced unlock: %v, want ErrLockLost", err)
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Unlock after a forced unlock: %v, want ErrLockLost", err)
	}
}
