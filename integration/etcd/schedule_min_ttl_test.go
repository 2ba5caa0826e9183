package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
)

// startSlowElectionEtcd starts one etcd member with an election timeout of
// 2.5s, so that the cluster's minimum lease TTL is 4s (1.5 election
// timeouts, rounded up), and returns its client URL.
func startSlowElectionEtcd(t *testing.T) string {
	t.Helper()
	bin, err := etcdcluster.Find()
	if err != nil {
		t.Skip(err)
	}
	free := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", free())
	peer := fmt.Sprintf("http://127.0.0.1:%d", free())
	cmd := exec.Command(bin, "--name", "m0", "--data-dir", filepath.Join(t.TempDir(), "m0"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "m0="+peer, "--heartbeat-interval", "250", "--election-timeout", "2500")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	cli := newClientOn(t, client)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not start: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return client
}

// A cluster whose minimum lease TTL is longer than etcd's default: Schedule
// must know it before it accepts a spec, and refuse one the store cannot
// serve (*/3 needs holds the minimum of 4s outlasts), rather than run it with
// holds the store keeps past the next fire time, or none at all. A spec it
// accepts (*/5) runs on two pods whose clocks differ by 300ms, within the
// default bound of 500ms: each fire time once, none skipped.
func TestScheduleOnClusterWithLongerMinimumTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	url := startSlowElectionEtcd(t)
	{
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		g, err := cli.Grant(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the cluster's minimum TTL: %ds", g.TTL)
		_ = cli.Close()
	}
	env := newEnv()
	var mu sync.Mutex
	ran := map[time.Time][]string{}
	added := time.Now()
	{
		p := newProvider(t, newClientOn(t, url), env, "refused")
		ex := shedlock.NewExecutor(p)
		_, err := ex.Schedule(cron.New(cron.WithSeconds()), "*/3 * * * * *",
			shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second}, func(context.Context) error { return nil })
		if !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Fatalf("Schedule of */3 on a cluster of minimum TTL 4s: %v; want ErrInvalidConfig, a hold of 4s "+
				"outlasting the 2.5s before the next fire time", err)
		}
		t.Logf("refused: %v", err)
		_ = ex.Stop(context.Background())
	}
	const spec, interval = "*/5 * * * * *", 5 * time.Second
	pod := func(name string, lag time.Duration) {
		p := newProvider(t, newClientOn(t, url), env, name)
		ex := shedlock.NewExecutor(p)
		c := cron.New(cron.WithSeconds(), cron.WithChain(func(j cron.Job) cron.Job {
			return cron.FuncJob(func() { time.Sleep(lag); j.Run() }) // this pod's clock is behind by lag
		}))
		_, err := ex.Schedule(c, spec, shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second},
			func(ctx context.Context) error {
				fire, _ := shedlock.FireTimeFromContext(ctx)
				mu.Lock()
				ran[fire] = append(ran[fire], name)
				mu.Unlock()
				return nil
			})
		if err != nil {
			t.Fatalf("Schedule on %s: %v", name, err)
		}
		c.Start()
		t.Cleanup(func() { <-c.Stop().Done(); _ = ex.Stop(context.Background()) })
	}
	pod("a", 0)
	pod("b", 300*time.Millisecond)
	time.Sleep(21 * time.Second) // four fire times or more; the outcome is read from the runs, not the clock
	mu.Lock()
	defer mu.Unlock()
	var fires []time.Time
	for f := range ran {
		fires = append(fires, f)
	}
	sort.Slice(fires, func(i, j int) bool { return fires[i].Before(fires[j]) })
	var bad []string
	for i, f := range fires {
		if f.Before(added) {
			continue
		}
		t.Logf("fire time %s ran on %v", f.Format("05.000"), ran[f])
		if len(ran[f]) > 1 {
			bad = append(bad, fmt.Sprintf("fire time %s ran %d times (%v)", f.Format("05.000"), len(ran[f]), ran[f]))
		}
		if i > 0 && f.Sub(fires[i-1]) > interval {
			bad = append(bad, fmt.Sprintf("fire times between %s and %s skipped", fires[i-1].Format("05.000"), f.Format("05.000")))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("Schedule on a cluster of minimum TTL 4s: %v", bad)
	}
}
