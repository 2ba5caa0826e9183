package etcdcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
)

// A cluster starts with one leader; its leader SIGKILLed, the other two elect
// another; restarted, it rejoins healthy.
func TestKillAndRestartLeader(t *testing.T) {
	c := etcdcluster.New(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	if leader.Running() || leader.PID() != 0 {
		t.Fatalf("%s still runs after Kill", leader.Name)
	}
	next, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("the killed member %s still leads", leader.Name)
	}
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints()) != 3 {
		t.Fatalf("endpoints %v", c.Endpoints())
	}
}
