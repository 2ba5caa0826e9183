package shedlock

import (
	"slices"
	"strings"
	"time"
)

// JobInfo is one job an executor has registered, as this process sees it.
type JobInfo struct {
	// Name is the job's lock name.
	Name string
	// Next is the job's next fire time here: for a Schedule job its cron
	// schedule's, for a FixedDelay job when its next run is due; zero for a
	// job run by hand (Run, Wrap), or not yet started.
	Next time.Time
	// Running reports whether this process runs the job now.
	Running bool
}

// Jobs returns the jobs registered with the executor (WithLock, Wrap,
// Schedule, FixedDelay), by name, with their next fire times here. It costs
// no statement.
func (e *Executor) Jobs() []JobInfo {
	g := e.reg
	g.mu.Lock()
	jobs := make([]JobInfo, 0, len(g.names))
	keys := make([]string, 0, len(g.names))
	entries := make([]cronEntry, 0, len(g.names))
	loops := make([]*fixedDelayLoop, 0, len(g.names))
	for key, name := range g.names {
		jobs = append(jobs, JobInfo{Name: name})
		keys = append(keys, key)
		entries = append(entries, g.entries[key])
		loops = append(loops, g.loops[key])
	}
	g.mu.Unlock()
	for i := range jobs { // the cron's lock is taken without g.mu (see freeRemoved)
		switch {
		case entries[i].c != nil:
			jobs[i].Next = entries[i].c.Entry(entries[i].id).Next
		case loops[i] != nil:
			if n := loops[i].next.Load(); n != 0 {
				jobs[i].Next = time.Unix(0, n)
			}
		}
		jobs[i].Running = e.here.isRunning(keys[i])
	}
	slices.SortFunc(jobs, func(a, b JobInfo) int { return strings.Compare(a.Name, b.Name) })
	return jobs
}
