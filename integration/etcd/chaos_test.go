package etcd_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// chaosFor is how long TestEtcdChaos runs; make chaos-etcd runs it for 60s.
var chaosFor = flag.Duration("etcd.chaos", 12*time.Second, "how long TestEtcdChaos contends")

// chaosNames are the locks the workers contend for.
var chaosNames = []string{"alpha", "beta", "gamma"}

const (
	chaosWorkers = 4
	chaosMost    = 10 * time.Second // LockAtMostFor: far beyond a run, so that only a lost guarantee overlaps
	workerEnv    = "SHEDLOCK_ETCD_CHAOS_WORKER"
)

// TestEtcdChaos runs 4 worker processes that contend for 3 names on a
// three-member cluster, each run an unguarded read-modify-write of a
// counter key that a second holder at once would lose an update of, while
// the leader member is SIGKILLed and restarted twice and one worker's
// connections are reset. It checks from the workers' journals that no
// update was lost and no two runs of a name overlapped.
func TestEtcdChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	c := etcdcluster.New(t, 3)
	env := newEnv()
	dir := t.TempDir()
	ctx := t.Context()

	// Worker 0 reaches the members through fault proxies, whose connections
	// the run resets.
	var proxies []*faultproxy.Proxy
	var proxied []string
	for _, m := range c.Members() {
		p, err := faultproxy.Start(strings.TrimPrefix(m.ClientURL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		proxies = append(proxies, p)
		proxied = append(proxied, "http://"+p.Addr())
	}

	var workers []*exec.Cmd
	var stdins []*os.File
	for i := range chaosWorkers {
		endpoints := c.Endpoints()
		if i == 0 {
			endpoints = proxied
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"="+strings.Join([]string{
			strconv.Itoa(i), env, strings.Join(endpoints, ","), filepath.Join(dir, fmt.Sprintf("worker-%d.journal", i)),
		}, ";"))
		cmd.Stdin = r
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		logf.Close()
		workers = append(workers, cmd)
		stdins = append(stdins, w)
	}
	t.Cleanup(func() {
		for _, w := range workers {
			if w.ProcessState == nil {
				_ = w.Process.Kill()
				_ = w.Wait()
			}
		}
	})

	begin := time.Now()
	at := func(share float64) {
		t.Helper()
		if err := sleepUntil(ctx, begin.Add(time.Duration(share*float64(*chaosFor)))); err != nil {
			t.Fatal(err)
		}
	}
	down := min(3*time.Second, *chaosFor/8)
	killLeader := func() {
		t.Helper()
		leader, err := c.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := leader.Kill(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: SIGKILLed the leader %s", time.Since(begin).Round(time.Millisecond), leader.Name)
		if err := sleepUntil(ctx, time.Now().Add(down)); err != nil {
			t.Fatal(err)
		}
		if err := leader.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		next, err := c.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %s restarted; %s leads", time.Since(begin).Round(time.Millisecond), leader.Name, next.Name)
	}
	at(0.2)
	killLeader()
	at(0.45)
	resets := 0
	for _, p := range proxies {
		resets += p.ResetAll()
	}
	t.Logf("%v: reset worker 0's %d connections", time.Since(begin).Round(time.Millisecond), resets)
	at(0.6)
	killLeader()
	at(1)
	for _, w := range stdins {
		_ = w.Close() // the workers stop after the run in hand
	}
	for i, w := range workers {
		if err := w.Wait(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
			t.Fatalf("worker %d: %v\n%s", i, err, log)
		}
	}

	cli := newClient(t, c)
	var runs []chaosRun
	for i := range chaosWorkers {
		rs, err := readJournal(filepath.Join(dir, fmt.Sprintf("worker-%d.journal", i)))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, rs...)
	}
	checkChaos(t, cli, env, runs)
}

// chaosRun is one line of a worker's journal: a run of a name under its lock.
type chaosRun struct {
	name, id           string
	acquired, released time.Time // after TryLock returned; before Unlock was sent
	status             string    // ok: the write was acknowledged; none: nothing written; unknown: the write failed, and may have been made
}

func checkChaos(t *testing.T, cli *clientv3.Client, env string, runs []chaosRun) {
	t.Helper()
	byName := map[string][]chaosRun{}
	for _, r := range runs {
		byName[r.name] = append(byName[r.name], r)
	}
	lost, overlaps, ok, unknown := 0, 0, 0, 0
	for _, name := range chaosNames {
		rs := byName[name]
		resp, err := cli.Get(context.Background(), counterKey(env, name))
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]bool{}
		if len(resp.Kvs) == 1 {
			for _, id := range strings.Split(string(resp.Kvs[0].Value), ",") {
				written[id] = true
			}
		}
		for _, r := range rs {
			switch r.status {
			case "ok":
				ok++
				if !written[r.id] {
					lost++
					t.Errorf("lock %s: the update of run %s (acknowledged) is lost", name, r.id)
				}
			case "unknown":
				unknown++
			}
		}
		slices.SortFunc(rs, func(a, b chaosRun) int { return a.acquired.Compare(b.acquired) })
		var last chaosRun
		for _, r := range rs {
			if r.status == "unknown" {
				continue // its holder left the lock to its lease: no end to compare
			}
			if !last.released.IsZero() && r.acquired.Before(last.released) {
				overlaps++
				t.Errorf("lock %s: run %s began %v before run %s ended", name, r.id, last.released.Sub(r.acquired), last.id)
			}
			if r.released.After(last.released) {
				last = r
			}
		}
	}
	t.Logf("%d runs on %d names by %d workers in %v: %d acknowledged, %d with an unknown outcome; %d lost updates, %d overlaps",
		len(runs), len(chaosNames), chaosWorkers, *chaosFor, ok, unknown, lost, overlaps)
	if ok < 10*len(chaosNames) {
		t.Errorf("only %d acknowledged runs: the run proves little", ok)
	}
}

func counterKey(env, name string) string { return "chaos-counter:" + env + ":" + name }

func sleepUntil(ctx context.Context, when time.Time) error {
	t := time.NewTimer(time.Until(when))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func readJournal(path string) ([]chaosRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []chaosRun
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		a, err1 := strconv.ParseInt(fs[2], 10, 64)
		r, err2 := strconv.ParseInt(fs[3], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		runs = append(runs, chaosRun{name: fs[0], id: fs[1], acquired: time.Unix(0, a), released: time.Unix(0, r), status: fs[4]})
	}
	return runs, sc.Err()
}

// chaosWorker is a worker process: it takes the names' locks in turn until
// its stdin closes, and journals each run.
func chaosWorker(spec string) int {
	parts := strings.Split(spec, ";")
	if len(parts) != 4 {
		fmt.Fprintln(os.Stderr, "bad worker spec", spec)
		return 2
	}
	id, env, endpoints, journal := parts[0], parts[1], strings.Split(parts[2], ","), parts[3]
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cli.Close()
	p, err := shedlocketcd.NewProvider(cli, shedlocketcd.WithEnv(env), shedlocketcd.WithLockedBy("worker-"+id))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	jf, err := os.Create(journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer jf.Close()
	stop := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadByte() // EOF when the test closes the pipe
		close(stop)
	}()
	errs := 0
	for n := 0; ; n++ {
		select {
		case <-stop:
			fmt.Fprintf(os.Stderr, "worker %s: %d attempts, %d errors\n", id, n, errs)
			return 0
		default:
		}
		name := chaosNames[rand.N(len(chaosNames))]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: chaosMost})
		cancel()
		if err != nil {
			if !errors.Is(err, shedlock.ErrNotAcquired) {
				errs++
				fmt.Fprintf(os.Stderr, "TryLock %s: %v\n", name, err)
			}
			time.Sleep(time.Duration(2+rand.N(10)) * time.Millisecond) // between attempts
			continue
		}
		acquired := time.Now()
		runID := fmt.Sprintf("w%s.%d", id, n)
		status := chaosIncrement(cli, counterKey(env, name), runID)
		released := time.Now()
		fmt.Fprintf(jf, "%s %s %d %d %s\n", name, runID, acquired.UnixNano(), released.UnixNano(), status)
		if status == "unknown" {
			// The write may yet be applied: keep the lock until its lease
			// ends rather than let another run read before it lands.
			continue
		}
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		if err := l.Unlock(ctx); err != nil {
			errs++
			fmt.Fprintf(os.Stderr, "Unlock %s: %v\n", name, err)
		}
		cancel()
	}
}

// chaosIncrement appends runID to the counter key by a plain read and an
// unguarded write, with a pause between: a second holder at once loses one
// of the two appends.
func chaosIncrement(cli *clientv3.Client, key, runID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return "none"
	}
	value := runID
	if len(resp.Kvs) == 1 {
		value = string(resp.Kvs[0].Value) + "," + runID
	}
	time.Sleep(time.Duration(1+rand.N(10)) * time.Millisecond) // the work, widening any overlap
	if _, err := cli.Put(ctx, key, value); err != nil {
		return "unknown"
	}
	return "ok"
}
