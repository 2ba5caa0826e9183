package k8s_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// chaosFor is how long TestChaos contends.
var chaosFor = flag.Duration("k8s.chaos", 40*time.Second, "how long TestChaos contends")

// chaosNames are the locks the pods contend for.
var chaosNames = []string{"alpha", "beta", "gamma"}

const (
	chaosPods = 4
	chaosMost = 3 * time.Second // LockAtMostFor: a run takes milliseconds, so only a paused pod outlives it
	chaosStop = 5 * time.Second // a SIGSTOP lasts longer than a lock
)

// TestChaos runs 4 pod processes that contend for 3 names on a private API
// server, each run a read-modify-write of a counter ConfigMap that nothing
// but the lock orders, fenced by the lock's token (a paused pod that resumes
// past its lock has its write refused), while pods are SIGKILLed and
// restarted, SIGSTOPped past their lock and resumed, and the API server is
// restarted. From the pods' journals: no acknowledged update is lost, no two
// runs of a name overlap unless one of them was paused, and every write the
// fence refused came from a run that was paused.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	t.Parallel()
	s := kubeapiserver.New(t)
	ctx := t.Context()
	const ns = "chaos"
	if err := prepareNamespace(ctx, s, ns); err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, ns, kubeapiserver.Locker, "", "configmaps", "get", "patch"); err != nil {
		t.Fatal(err)
	}
	if err := installFencePolicy(ctx, s, ns); err != nil {
		t.Fatal(err)
	}
	admin := newAdminClientset(s)
	for _, name := range chaosNames {
		if err := createFenced(ctx, admin, ns, counterName(name)); err != nil {
			t.Fatal(err)
		}
	}
	env := newEnv()
	dir := t.TempDir()
	pods := make([]*pod, chaosPods)
	start := func(i int) {
		pods[i] = startPod(t, s, dir, workerSpec{Kind: "chaos", ID: fmt.Sprintf("pod-%d", i), Namespace: ns, Env: env})
	}
	for i := range pods {
		start(i)
	}
	watcher := newProvider(t, admin, ns, env, "watcher")
	c := chaosRun{t: t, begin: time.Now(), pods: pods, watcher: watcher}
	c.at(0.15)
	c.killHolder(start)
	c.at(0.3)
	c.stopHolder()
	c.at(0.45)
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: restarted the API server", c.since())
	c.at(0.6)
	c.stopHolder()
	c.at(0.75)
	c.killHolder(start)
	c.at(0.85)
	c.stopHolder()
	c.at(1)
	for _, p := range pods {
		p.stop(t)
	}
	checkChaos(t, admin, ns, readJournals(t, dir), c.paused)
}

// chaosRun is the supervisor's side of TestChaos.
type chaosRun struct {
	t       *testing.T
	begin   time.Time
	pods    []*pod
	watcher *shedlockk8s.Provider
	paused  []pause
}

// pause is a span in which a pod was stopped.
type pause struct {
	pod      string
	from, to int64
}

func (c *chaosRun) since() time.Duration { return time.Since(c.begin).Round(time.Millisecond) }

func (c *chaosRun) at(share float64) {
	c.t.Helper()
	if err := sleepUntil(c.t.Context(), c.begin.Add(time.Duration(share*float64(*chaosFor)))); err != nil {
		c.t.Fatal(err)
	}
}

// holder returns the index of a pod that holds a lock now, as the Leases
// show it, or a random pod when none does: a signal then likely lands in a run.
func (c *chaosRun) holder() int {
	locks, err := c.watcher.Locks(c.t.Context())
	if err == nil {
		for _, l := range locks {
			if i, ok := podIndex(l.LockedBy); ok && l.Held {
				return i
			}
		}
	}
	return rand.N(len(c.pods))
}

func podIndex(lockedBy string) (int, bool) {
	var i int
	_, err := fmt.Sscanf(lockedBy, "pod-%d#", &i)
	return i, err == nil && i >= 0 && i < chaosPods
}

func (c *chaosRun) killHolder(start func(int)) {
	i := c.holder()
	c.pods[i].kill(c.t)
	c.t.Logf("%v: SIGKILLed pod-%d", c.since(), i)
	start(i)
}

func (c *chaosRun) stopHolder() {
	i := c.holder()
	from := time.Now().UnixNano()
	c.pods[i].signal(c.t, syscall.SIGSTOP)
	if err := sleepUntil(c.t.Context(), time.Now().Add(chaosStop)); err != nil {
		c.t.Fatal(err)
	}
	c.pods[i].signal(c.t, syscall.SIGCONT)
	c.paused = append(c.paused, pause{pod: c.pods[i].spec.ID, from: from, to: time.Now().UnixNano()})
	c.t.Logf("%v: pod-%d was SIGSTOPped for %v", c.since(), i, chaosStop)
}

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

func counterName(name string) string { return "counter-" + name }

// checkChaos checks the runs the journals recorded against the counters.
func checkChaos(t *testing.T, admin kubernetes.Interface, ns string, evs []event, paused []pause) {
	t.Helper()
	byName := map[string][]event{}
	for _, e := range evs {
		if e.Ev == "run" {
			byName[e.Name] = append(byName[e.Name], e)
		}
	}
	wasPaused := func(r event) bool {
		return slices.ContainsFunc(paused, func(p pause) bool { return p.pod == r.Pod && p.from < r.Rel && p.to > r.Acq })
	}
	counts := map[string]int{}
	lost, overlaps, pausedRuns := 0, 0, 0
	for _, name := range chaosNames {
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(context.Background(), counterName(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]bool{}
		for _, id := range strings.Split(cm.Data["value"], ",") {
			written[id] = true
		}
		var steady []event // the runs of pods that were not paused meanwhile
		for _, r := range byName[name] {
			counts[r.Status]++
			switch {
			case r.Status == "ok" && !written[r.ID]:
				lost++
				t.Errorf("lock %s: the update of run %s (acknowledged) is lost", name, r.ID)
			case r.Status == "fenced" && !wasPaused(r):
				t.Errorf("lock %s: run %s, whose pod was not paused, found a later token in the counter", name, r.ID)
			}
			if wasPaused(r) {
				pausedRuns++
			} else {
				steady = append(steady, r)
			}
		}
		overlaps += countOverlaps(t, name, steady)
	}
	t.Logf("%d pods, %d names, %v: runs by status %v (%d touched by a SIGSTOP); %d lost updates, %d overlaps",
		chaosPods, len(chaosNames), *chaosFor, counts, pausedRuns, lost, overlaps)
	if counts["ok"] < 10*len(chaosNames) {
		t.Errorf("only %d acknowledged runs: the run proves little", counts["ok"])
	}
}

// countOverlaps reports every two runs of name whose spans intersect.
func countOverlaps(t *testing.T, name string, runs []event) int {
	t.Helper()
	slices.SortFunc(runs, func(a, b event) int { return int(a.Acq - b.Acq) })
	n := 0
	var last event
	for _, r := range runs {
		if last.Rel != 0 && r.Acq < last.Rel {
			n++
			t.Errorf("lock %s: run %s began %v before run %s ended", name, r.ID, time.Duration(last.Rel-r.Acq), last.ID)
		}
		if r.Rel > last.Rel {
			last = r
		}
	}
	return n
}

// chaosWorker is a pod of TestChaos: it takes the names' locks in turn
// until stop closes, and journals each run.
func chaosWorker(spec workerSpec, j *journal, stop <-chan struct{}) error {
	var requests atomic.Int64
	c, err := spec.client(&requests, 3*time.Second)
	if err != nil {
		return err
	}
	p, err := shedlockk8s.NewProvider(c, spec.Namespace, shedlockk8s.WithEnv(spec.Env), shedlockk8s.WithLockedBy(spec.ID))
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		name := chaosNames[rand.N(len(chaosNames))]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: chaosMost})
		cancel()
		if err != nil {
			if !errors.Is(err, shedlock.ErrNotAcquired) {
				fmt.Fprintf(os.Stderr, "TryLock %s: %v\n", name, err)
			}
			time.Sleep(time.Duration(2+rand.N(10)) * time.Millisecond) // between attempts
			continue
		}
		acq := time.Now()
		fence, _ := shedlock.FenceOf(l)
		id := fmt.Sprintf("%s.%d", spec.ID, i)
		status := chaosIncrement(c, spec.Namespace, name, id, fence, l, acq)
		j.log(event{Ev: "run", Name: name, ID: id, Acq: acq.UnixNano(), Rel: time.Now().UnixNano(), Fence: fence, Status: status})
		if status == "unknown" || status == "expired" {
			continue // a write may yet land: the lock stays until its hold ends
		}
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		if err := l.Unlock(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "Unlock %s: %v\n", name, err)
		}
		cancel()
	}
}

// chaosIncrement appends id to the counter of name under l: it claims the
// counter with the lock's token, reads it, works a little and writes it back
// by a patch that nothing but the token guards. Its status: ok, fenced (a
// later token was stored), none (nothing written but the claim), expired
// (the lock ran out before the write: none made), unknown (a write without
// an answer).
func chaosIncrement(c kubernetes.Interface, ns, name, id string, fence int64, l shedlock.Lock, acq time.Time) string {
	ctx, cancel := context.WithDeadline(context.Background(), acq.Add(chaosMost*8/10))
	defer cancel()
	if st, _ := fencedPatch(ctx, c, ns, counterName(name), fence, nil); st != "ok" {
		return st
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, counterName(name), metav1.GetOptions{})
	if err != nil {
		return "none"
	}
	time.Sleep(time.Duration(1+rand.N(10)) * time.Millisecond) // the work, widening any overlap
	if shedlock.AssertLocked(shedlock.ContextWithLock(ctx, l)) != nil {
		return "expired"
	}
	st, _ := fencedPatch(ctx, c, ns, counterName(name), fence, map[string]string{"value": cm.Data["value"] + "," + id})
	return st
}
