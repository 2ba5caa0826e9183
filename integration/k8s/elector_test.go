package k8s_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// electorPods is how many candidates each group has.
const electorPods = 3

// electorSteady is how long each group runs with a stable leader while its
// Lease requests are counted.
const electorSteady = 30 * time.Second

// TestElectors runs, side by side on one API server, three candidates with
// shedlock.Leader on shedlockk8s and three with client-go's LeaderElector at
// its defaults (lease 15s, renew deadline 10s, retry 2s; shedlock.Leader with
// the same lease and retry). Each leader writes its name into a ledger
// ConfigMap every 220ms. It measures, per group: Lease requests a minute of
// the leader and of a follower; the failover after the leader is SIGKILLed,
// and after the next one is SIGSTOPped; and what the stopped leader does when
// it resumes: with shedlock its write carries its stale term's token, which
// the API server refuses, while client-go's, which has no token, lands in the
// new leader's ledger.
func TestElectors(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	t.Parallel()
	s := sharedServer(t)
	ctx := t.Context()
	const ns = "electors"
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
	if err := createFenced(ctx, admin, ns, "ledger-shedlock-leader"); err != nil {
		t.Fatal(err)
	}
	if err := createUnfenced(ctx, admin, ns, "ledger-client-go-leader"); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"shedlock-leader", "client-go-leader"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			electorGroup(t, s, ns, kind)
		})
	}
}

// electorGroup runs one group's candidates through the steps of TestElectors.
func electorGroup(t *testing.T, s *kubeapiserver.Server, ns, kind string) {
	dir := t.TempDir()
	env := newEnv()
	pods := map[string]*pod{}
	for i := range electorPods {
		id := fmt.Sprintf("%s-%d", kind, i)
		pods[id] = startPod(t, s, dir, workerSpec{Kind: kind, ID: id, Namespace: ns, Env: env})
	}
	first := waitWriter(t, dir, "", 0, 60*time.Second)
	steadyFrom := time.Now()
	if err := sleepUntil(t.Context(), steadyFrom.Add(electorSteady)); err != nil {
		t.Fatal(err)
	}
	steadyTo := time.Now()

	killed := time.Now()
	pods[first].kill(t)
	second := waitWriter(t, dir, first, killed.UnixNano(), 60*time.Second)
	if err := sleepUntil(t.Context(), time.Now().Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	pods[second].signal(t, syscall.SIGSTOP)
	third := waitWriter(t, dir, second, stopped.UnixNano(), 60*time.Second)
	if err := sleepUntil(t.Context(), time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	pods[second].signal(t, syscall.SIGCONT)
	// client-go's leader steps down once it has failed to renew for its
	// renew deadline: wait that long, and a retry more.
	if err := sleepUntil(t.Context(), time.Now().Add(electRenew+electRetry)); err != nil {
		t.Fatal(err)
	}
	for id, p := range pods {
		if id != first {
			p.stop(t)
		}
	}

	evs := readJournals(t, dir)
	r := electorReport{kind: kind, dual: -1}
	r.leaderRPM, r.followerRPM = requestsPerMinute(evs, first, steadyFrom, steadyTo)
	r.killFailover = termStart(evs, second, killed) - killed.UnixNano()
	r.stopFailover = termStart(evs, third, stopped) - stopped.UnixNano()
	r.stale(evs, second, third, resumed)
	t.Log(r)
	if kind == "shedlock-leader" && r.staleAccepted > 0 {
		t.Errorf("%s: the resumed leader's stale term wrote %d times into the ledger", kind, r.staleAccepted)
	}
	if r.staleAccepted+r.staleRefused == 0 {
		t.Errorf("%s: the resumed leader wrote nothing: the SIGSTOP did not land in its work, and the run shows nothing", kind)
	}
}

// waitWriter polls the journals until a pod other than not has written
// into the ledger (accepted) after since, and returns it.
func waitWriter(t *testing.T, dir, not string, since int64, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, e := range readJournals(t, dir) {
			if e.Ev == "write" && e.Status == "ok" && e.Pod != not && e.T > since {
				return e.Pod
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod but %q wrote within %v", not, timeout)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// electorReport is one group's figures.
type electorReport struct {
	kind                       string
	leaderRPM, followerRPM     float64
	killFailover, stopFailover int64 // from the signal to the next leader's term, ns
	staleAccepted              int   // writes of the resumed old leader after the new one's term began
	staleRefused               int   // of them, refused by the fence
	dual                       int64 // how long the resumed old leader still believed it led, ns; -1: to the end
}

func (r electorReport) String() string {
	dual := "to the end of the run"
	if r.dual >= 0 {
		dual = time.Duration(r.dual).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s: Lease requests a minute: leader %.1f, follower %.1f; failover after SIGKILL %v, after SIGSTOP %v; "+
		"resumed old leader: believed it led for %s more, %d writes accepted, %d refused by the fence",
		r.kind, r.leaderRPM, r.followerRPM, time.Duration(r.killFailover).Round(time.Millisecond),
		time.Duration(r.stopFailover).Round(time.Millisecond), dual,
		r.staleAccepted, r.staleRefused)
}

// requestsPerMinute is the rate of Lease requests of the leader, and of
// the busiest follower, between from and to.
func requestsPerMinute(evs []event, leader string, from, to time.Time) (float64, float64) {
	at := map[string][2]int64{} // per pod: the counts last journaled before from and before to
	for _, e := range evs {
		if e.Ev != "requests" {
			continue
		}
		c := at[e.Pod]
		if e.T <= from.UnixNano() {
			c[0] = e.N
		}
		if e.T <= to.UnixNano() {
			c[1] = e.N
		}
		at[e.Pod] = c
	}
	minutes := to.Sub(from).Minutes()
	var lead, follow float64
	for pod, c := range at {
		rpm := float64(c[1]-c[0]) / minutes
		if pod == leader {
			lead = rpm
		} else {
			follow = max(follow, rpm)
		}
	}
	return lead, follow
}

// termStart is when pod's first term after since began, in ns.
func termStart(evs []event, pod string, since time.Time) int64 {
	for _, e := range sortedEvents(evs) {
		if e.Ev == "lead" && e.Pod == pod && e.T > since.UnixNano() {
			return e.T
		}
	}
	return 0
}

// stale counts the writes old made after it resumed, once next's term had
// begun, and how long old still believed it led.
func (r *electorReport) stale(evs []event, old, next string, resumed time.Time) {
	for _, e := range sortedEvents(evs) {
		if e.Pod != old || e.T < resumed.UnixNano() {
			continue
		}
		switch {
		case e.Ev == "write" && e.Status == "ok":
			r.staleAccepted++
		case e.Ev == "write" && e.Status == "fenced":
			r.staleRefused++
		case e.Ev == "unlead" && r.dual < 0:
			r.dual = e.T - resumed.UnixNano()
		}
	}
	_ = next
}

func sortedEvents(evs []event) []event {
	s := slices.Clone(evs)
	slices.SortFunc(s, func(a, b event) int { return int(a.T - b.T) })
	return s
}
