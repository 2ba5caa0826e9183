package shedlockhttp

import (
	"context"
	"slices"
	"time"

	"github.com/shedlock-go/shedlock"
)

// view is everything one request shows: the page, its live part, the API.
type view struct {
	Now     time.Time
	Query   lockQuery
	Page    lockPage
	Leaders []leaderView
	Jobs    []jobView
	HasJobs bool
	// HasRecorder reports WithRecorder: the timeline is shown.
	HasRecorder bool
	Record      record
	// StoreErr is the store's failure to list the locks, shown instead.
	StoreErr string
}

// leaderView is a leader's lease: who leads now, and this process's terms.
type leaderView struct {
	Name       string    `json:"name"`
	Held       bool      `json:"held"`
	LockedBy   string    `json:"locked_by"`
	Since      time.Time `json:"since,omitzero"`
	TimeLeftMS int64     `json:"time_left_ms"`
	// Mine reports that a Leader of this process leads now; Fence is then
	// its term's fencing token.
	Mine  bool   `json:"mine,omitempty"`
	Fence int64  `json:"fence,omitempty"`
	Terms []Term `json:"terms"`
}

// jobView is one job this process runs.
type jobView struct {
	Name    string    `json:"name"`
	Next    time.Time `json:"next,omitzero"`
	Running bool      `json:"running"`
	LastRun *Hold     `json:"last_run,omitempty"`
	Skip    *Skip     `json:"last_skip,omitempty"`
	Paused  bool      `json:"paused"`
	// PausedUntil and RunRequests are the store's, as for the lock.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	RunRequests int64     `json:"run_requests"`
}

// build reads the store once and assembles what q asks for.
func (h *handler) build(ctx context.Context, q lockQuery) view {
	v := view{Now: time.Now(), Query: q, Record: h.o.recorder.snapshot(), HasRecorder: h.o.recorder != nil}
	ctx, cancel := context.WithTimeout(ctx, h.o.timeout)
	defer cancel()
	locks, err := h.admin.Locks(ctx)
	if err != nil {
		h.o.log.Warn("shedlockhttp: list the locks", "err", err)
		v.StoreErr = err.Error()
	}
	v.Page = pageOf(locks, q)
	if err := h.fires.fill(ctx, v.Page.Locks); err != nil {
		h.o.log.Warn("shedlockhttp: read the last fire times", "err", err)
	}
	var jobs []shedlock.JobInfo
	if h.o.jobs != nil {
		v.HasJobs = true
		jobs = h.o.jobs.Jobs()
	}
	leaders := h.leaderNames(v.Record)
	byName := lockIndex(locks, leaders, jobs)
	v.Leaders = leaderViews(leaders, byName, v.Record)
	v.Jobs = jobViews(jobs, byName, v.Record)
	h.mark(v.Page.Locks, leaders, jobs, v.Record)
	return v
}

// leaderNames are the leases of WithLeaders and of the terms recorded, sorted.
func (h *handler) leaderNames(rec record) []string {
	names := slices.Clone(h.o.leaders)
	for _, t := range rec.Terms {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// lockIndex picks from locks those of the leaders and jobs, by name.
func lockIndex(locks []shedlock.LockInfo, leaders []string, jobs []shedlock.JobInfo) map[string]*shedlock.LockInfo {
	want := make(map[string]bool, len(leaders)+len(jobs))
	for _, n := range leaders {
		want[n] = true
	}
	for _, j := range jobs {
		want[j.Name] = true
	}
	out := make(map[string]*shedlock.LockInfo, len(want))
	for i := range locks {
		if want[locks[i].Name] {
			out[locks[i].Name] = &locks[i]
		}
	}
	return out
}

func leaderViews(names []string, byName map[string]*shedlock.LockInfo, rec record) []leaderView {
	out := make([]leaderView, 0, len(names))
	for _, n := range names {
		lv := leaderView{Name: n, Terms: []Term{}}
		if l := byName[n]; l != nil {
			lv.Held, lv.LockedBy, lv.Since, lv.TimeLeftMS = l.Held, l.LockedBy, l.LockedAt, l.TimeLeft.Milliseconds()
		}
		for i := len(rec.Terms) - 1; i >= 0 && len(lv.Terms) < 5; i-- {
			t := rec.Terms[i]
			if t.Name != n {
				continue
			}
			if t.End.IsZero() {
				lv.Mine, lv.Fence = true, t.Fence
			}
			lv.Terms = append(lv.Terms, t)
		}
		out = append(out, lv)
	}
	return out
}

func jobViews(jobs []shedlock.JobInfo, byName map[string]*shedlock.LockInfo, rec record) []jobView {
	out := make([]jobView, 0, len(jobs))
	for _, j := range jobs {
		jv := jobView{Name: j.Name, Next: j.Next, Running: j.Running}
		if h, ok := rec.LastRun[j.Name]; ok {
			jv.LastRun = &h
		}
		if s, ok := rec.LastSkip[j.Name]; ok {
			jv.Skip = &s
		}
		if l := byName[j.Name]; l != nil {
			jv.Paused, jv.PausedUntil, jv.RunRequests = l.Paused, l.PausedUntil, l.RunRequests
		}
		out = append(out, jv)
	}
	slices.SortFunc(out, func(a, b jobView) int { return compareNext(a.Next, b.Next, a.Name, b.Name) })
	return out
}

// compareNext orders jobs by next fire time, those without one last.
func compareNext(a, b time.Time, an, bn string) int {
	switch {
	case a.IsZero() != b.IsZero():
		if a.IsZero() {
			return 1
		}
		return -1
	case !a.Equal(b):
		return a.Compare(b)
	}
	if an < bn {
		return -1
	}
	if an > bn {
		return 1
	}
	return 0
}

// mark adds to the locks shown what this process knows of them.
func (h *handler) mark(locks []lockView, leaders []string, jobs []shedlock.JobInfo, rec record) {
	next := make(map[string]time.Time, len(jobs))
	for _, j := range jobs {
		next[j.Name] = j.Next
	}
	mine := map[string]int64{}
	for _, hd := range rec.Holds {
		if hd.End.IsZero() {
			mine[hd.Name] = 0
		}
	}
	for _, t := range rec.Terms {
		if t.End.IsZero() {
			mine[t.Name] = t.Fence
		}
	}
	for i := range locks {
		l := &locks[i]
		_, l.Leader = slices.BinarySearch(leaders, l.Name)
		l.Next = next[l.Name]
		if fence, ok := mine[l.Name]; ok {
			l.Mine, l.Fence = true, fence
		}
	}
}
