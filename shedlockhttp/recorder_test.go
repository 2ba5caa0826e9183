package shedlockhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockhttp"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// jobsExecutor is an executor of this process with two jobs: okJob every 42
// s (its next fire time set once its cron starts), and idleJob, on no
// schedule.
func jobsExecutor(t *testing.T, mem *shedlocktest.MemoryStore) *shedlock.Executor {
	t.Helper()
	ex := shedlock.NewExecutor(mem.Provider("pod-a"))
	c := cron.New()
	if _, err := ex.Schedule(c, "@every 42s", shedlock.LockConfig{Name: "okJob", LockAtMostFor: time.Second},
		func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Wrap(shedlock.LockConfig{Name: "idleJob", LockAtMostFor: time.Second},
		shedlock.JobFunc(func(context.Context) error { return nil })); err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() {
		<-c.Stop().Done()
		_ = ex.Stop(context.Background())
	})
	return ex
}

// What an executor and a leader of this process do reaches the page through
// the Recorder: holds on the SVG timeline and in api/events, the leader's
// term and fence, missed fire times and failures; WithJobs adds the jobs'
// next fire times.
func TestRecorderOnPage(t *testing.T) {
	mem := shedlocktest.NewMemoryStore()
	rec := shedlockhttp.NewRecorder()
	ex := shedlock.NewExecutor(mem.Provider("pod-a"), shedlock.WithListener(rec))
	ctx := context.Background()
	for _, name := range []string{"okJob", "badJob"} {
		_, err := ex.Run(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, func(context.Context) error {
			if name == "badJob" {
				return errors.New("the disk is full")
			}
			return nil
		})
		if err != nil && name == "okJob" {
			t.Fatal(err)
		}
	}
	leader, err := shedlock.NewLeader(mem.Provider("pod-a"), "leader-group", 10*time.Second, shedlock.WithLeaderListener(rec))
	if err != nil {
		t.Fatal(err)
	}
	leader.Start()
	defer func() { _ = leader.Stop(ctx) }()
	waitFor(t, "leadership", leader.IsLeader)
	fire := time.Now().Add(-30 * time.Second).Truncate(time.Second)
	rec.OnEvent(ctx, shedlock.Event{Kind: shedlock.EventMissedFireTime, Config: shedlock.LockConfig{Name: "nightly"},
		Time: time.Now(), FireTime: fire})
	if err := ex.Stop(ctx); err != nil { // every event delivered
		t.Fatal(err)
	}

	st := newControlStore()
	st.hold("leader-group", "pod-a#x.1", 10*time.Second)
	st.hold("okJob", "pod-a#x.2", 0)
	here := jobsExecutor(t, mem)
	next := here.Jobs()[slices.IndexFunc(here.Jobs(), func(j shedlock.JobInfo) bool { return j.Name == "okJob" })].Next
	if next.IsZero() {
		t.Fatal("okJob has no next fire time")
	}
	srv := newServer(t, st, quiet, shedlockhttp.WithRecorder(rec), shedlockhttp.WithJobs(here))

	var events struct {
		Available bool
		Holds     []shedlockhttp.Hold
		Terms     []shedlockhttp.Term
		Missed    []shedlockhttp.Missed
		Events    []shedlockhttp.Notable
	}
	_, body := get(t, srv, "/ops/locks/api/events")
	if err := json.Unmarshal([]byte(body), &events); err != nil {
		t.Fatal(err, body)
	}
	if !events.Available || len(events.Holds) != 2 || events.Holds[0].Name != "okJob" || events.Holds[0].Result != "ok" ||
		events.Holds[1].Result != "error" || events.Holds[1].End.IsZero() {
		t.Errorf("holds: %+v", events.Holds)
	}
	if len(events.Terms) != 1 || events.Terms[0].Name != "leader-group" || events.Terms[0].Fence == 0 || !events.Terms[0].End.IsZero() {
		t.Errorf("terms: %+v", events.Terms)
	}
	if len(events.Missed) != 1 || !events.Missed[0].FireTime.Equal(fire) {
		t.Errorf("missed: %+v", events.Missed)
	}
	if len(events.Events) != 1 || events.Events[0].Kind != "finished" || !strings.Contains(events.Events[0].Error, "disk is full") {
		t.Errorf("failures: %+v", events.Events)
	}

	_, page := get(t, srv, "/ops/locks/")
	for _, want := range []string{
		`<svg class="timeline"`, `<rect class="bar ok"`, `<rect class="bar error"`, `<rect class="bar term"`,
		`<path class="mark missed"`, `<g class="tl-row" data-name="okJob">`,
		`<tr data-leader="leader-group">`, `<span class="badge mine">this process</span>`, "fence ",
		`<tr data-job="okJob">`, "in 4", `<tr data-job="idleJob">`, `<span class="result ok">ok</span>`,
		`id="missed"`, "the disk is full", `<span class="badge leader">leader</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	var jobs struct {
		Available bool
		Jobs      []struct {
			Name string
			Next time.Time
		}
	}
	_, body = get(t, srv, "/ops/locks/api/jobs")
	if err := json.Unmarshal([]byte(body), &jobs); err != nil {
		t.Fatal(err)
	}
	if !jobs.Available || len(jobs.Jobs) != 2 || jobs.Jobs[0].Name != "okJob" || !jobs.Jobs[0].Next.Equal(next) {
		t.Errorf("api/jobs: %s", body)
	}
	var leaders struct {
		Leaders []struct {
			Name  string
			Mine  bool
			Fence int64
		}
	}
	_, body = get(t, srv, "/ops/locks/api/leaders")
	if err := json.Unmarshal([]byte(body), &leaders); err != nil {
		t.Fatal(err)
	}
	if len(leaders.Leaders) != 1 || !leaders.Leaders[0].Mine || leaders.Leaders[0].Fence != events.Terms[0].Fence {
		t.Errorf("api/leaders: %s", body)
	}
}

// Without a Recorder or jobs, the page has no timeline and the API says
// they are not available; with an empty one, the page says nothing is
// recorded yet.
func TestWithoutRecorder(t *testing.T) {
	srv := newServer(t, newControlStore(), quiet)
	_, body := get(t, srv, "/ops/locks/api/events")
	if !strings.Contains(body, `"available": false`) {
		t.Errorf("api/events: %s", body)
	}
	_, body = get(t, srv, "/ops/locks/")
	if strings.Contains(body, "timeline") || strings.Contains(body, `id="jobs"`) || !strings.Contains(body, "No locks in the store yet") {
		t.Error("the page without a recorder")
	}
	srv = newServer(t, newControlStore(), quiet, shedlockhttp.WithRecorder(shedlockhttp.NewRecorder()))
	if _, body = get(t, srv, "/ops/locks/"); !strings.Contains(body, "No hold recorded") {
		t.Error("the page with an empty recorder")
	}
}
