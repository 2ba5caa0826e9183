package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
)

// A hold kept after a release ends when the hold does, though a new cluster
// leader gives its lease the whole TTL again: the releasing process revokes
// the lease at the hold's end. Without that, the key outlived the hold by up
// to the TTL counted from the election.
func TestHoldEndsDespiteLeaderChange(t *testing.T) {
	c := etcdcluster.New(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, followers := leaderAndFollowers(ctx, t, c)
	cli := newClientOn(t, followers...)
	p := newProvider(t, cli, newEnv(), "pod")
	const hold = 3 * time.Second
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: hold})
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	elected := time.Now()
	// The new leader renews the hold's lease to its TTL (3 s) from now; the
	// hold itself ends 3 s after it was taken, a request's wait through the
	// election later at the most.
	for {
		r, err := cli.Get(ctx, p.Key("job"))
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if len(r.Kvs) == 0 {
			t.Logf("the key went %v after it was taken (hold %v), %v after the election",
				time.Since(taken).Round(time.Millisecond), hold, time.Since(elected).Round(time.Millisecond))
			return
		}
		if late := time.Since(taken.Add(hold)); late > 0 && time.Since(elected) > 2*time.Second {
			t.Fatalf("the key is still there %v after its hold ended and %v after the election: the new leader's TTL kept it",
				late.Round(time.Millisecond), time.Since(elected).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// leaderAndFollowers waits for c's leader, and returns it with the client
// URLs of the other members: a client on those keeps its connections through
// the leader's kill.
func leaderAndFollowers(ctx context.Context, t *testing.T, c *etcdcluster.Cluster) (*etcdcluster.Member, []string) {
	t.Helper()
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var followers []string
	for _, m := range c.Members() {
		if m != leader {
			followers = append(followers, m.ClientURL)
		}
	}
	return leader, followers
}
