package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what Analyze found.
type Report struct {
	Pods                         int
	Runs                         int
	Kills, HolderKills           int // SIGKILLs, and those that hit a pod inside a run
	Stops, HolderStops           int // SIGTERMs, and those that hit a pod inside a run
	DBRestarts                   int
	NetFaults                    int // faults put between a pod and the database
	Overlaps                     int
	WorstTakeover                time.Duration // SIGKILL of a holder to the job's next start
	WorstGraceful                time.Duration // end of a stopped run to the job's next start
	WorstResume                  time.Duration // database back to the job's next start
	TakeoverBound, GracefulBound time.Duration
	RunsPerPod                   map[string]map[string]int // pod, job: runs
	Violations                   []string
}

// Bounds returns how late a job may run again after a SIGKILL of its holder (the
// lock expires, then a pod's next attempt comes within one delay) and after a
// graceful stop (the lock is released, kept only for LockAtLeastFor).
func (p Params) Bounds(slack time.Duration) (takeover, graceful time.Duration) {
	return p.LockAtMostFor + p.Delay + slack, p.LockAtLeastFor + p.Delay + slack
}

// Analyze checks runs against events. end is when the supervisor stopped acting:
// a job that had not run again by then is judged only if its bound had passed.
func Analyze(runs []Run, events []Event, p Params, pods int, slack time.Duration, end time.Time) Report {
	r := Report{Pods: pods, Runs: len(runs), RunsPerPod: map[string]map[string]int{}}
	r.TakeoverBound, r.GracefulBound = p.Bounds(slack)
	killedAt := map[int]time.Time{}
	for _, e := range events {
		if e.Kind == Kill {
			killedAt[e.PID] = e.At
		}
	}
	byJob := map[string][]Run{}
	for _, run := range runs {
		byJob[run.Job] = append(byJob[run.Job], run)
		if r.RunsPerPod[run.Pod] == nil {
			r.RunsPerPod[run.Pod] = map[string]int{}
		}
		r.RunsPerPod[run.Pod][run.Job]++
	}
	for _, job := range Jobs {
		r.checkOverlaps(byJob[job], killedAt, p)
	}
	for _, e := range events {
		switch e.Kind {
		case Kill:
			r.Kills++
			r.checkKill(e, faultAfter(events, e.At, r.TakeoverBound), runs, byJob, end)
		case Stop:
			r.Stops++
			r.checkStop(e, events, runs, byJob, end)
		case NetFault:
			r.NetFaults++
		case DBRestart:
			r.DBRestarts++
			r.checkResume(e, byJob, end)
		}
	}
	for i := range pods {
		pod := fmt.Sprintf("pod-%d", i)
		for _, job := range Jobs {
			if r.RunsPerPod[pod][job] == 0 {
				r.violate("%s never ran %s", pod, job)
			}
		}
	}
	return r
}

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// checkOverlaps walks one job's runs in start order. A run with no recorded end
// is taken to last until its pod died, or else for LockAtMostFor, the longest
// the executor lets a task run.
func (r *Report) checkOverlaps(runs []Run, killedAt map[int]time.Time, p Params) {
	var last Run
	var lastEnd time.Time
	for _, run := range runs {
		if !lastEnd.IsZero() && run.Started.Before(lastEnd) {
			r.Overlaps++
			r.violate("overlap in %s: run %d (%s, pid %d) started %v before run %d (%s, pid %d) ended",
				run.Job, run.ID, run.Pod, run.PID, lastEnd.Sub(run.Started), last.ID, last.Pod, last.PID)
		}
		end := run.Ended
		if end.IsZero() {
			end = run.Started.Add(p.LockAtMostFor)
			if k, ok := killedAt[run.PID]; ok && k.Before(end) {
				end = k
			}
		}
		if end.After(lastEnd) {
			last, lastEnd = run, end
		}
	}
}

// next returns the first run of job that started after t.
func next(byJob map[string][]Run, job string, t time.Time) (Run, bool) {
	for _, run := range byJob[job] {
		if run.Started.After(t) {
			return run, true
		}
	}
	return Run{}, false
}

// faultAfter returns the time of the last database restart or network fault
// within bound after t, else t. A job cannot run while its database is away, and
// a lost acquire response leaves a lock no one knows it holds until it expires:
// a takeover that spans such a fault is measured from the fault.
func faultAfter(events []Event, t time.Time, bound time.Duration) time.Time {
	from := t
	for _, e := range events {
		if (e.Kind == DBRestart || e.Kind == NetFault) && e.At.After(from) && e.At.Sub(t) <= bound {
			from = e.At
		}
	}
	return from
}

func (r *Report) checkKill(e Event, from time.Time, runs []Run, byJob map[string][]Run, end time.Time) {
	held := false
	for _, run := range runs {
		// A run left open by an earlier fault (a database restart) is not this kill's.
		if run.PID != e.PID || !run.Ended.IsZero() || e.At.Sub(run.Started) > r.TakeoverBound {
			continue
		}
		n, ok := next(byJob, run.Job, run.Started)
		if ok && n.Started.Before(e.At) {
			continue // over before the kill: cut off by an earlier fault, not by this kill
		}
		held = true
		if !ok {
			if end.Sub(from) > r.TakeoverBound {
				r.violate("%s never ran again after SIGKILL of its holder %s (pid %d)", run.Job, e.Pod, e.PID)
			}
			continue
		}
		d := n.Started.Sub(from)
		r.WorstTakeover = max(r.WorstTakeover, d)
		if d > r.TakeoverBound {
			r.violate("%s ran again %v after SIGKILL of its holder %s (pid %d) (or after a fault that followed): bound %v",
				run.Job, d, e.Pod, e.PID, r.TakeoverBound)
		}
	}
	if held {
		r.HolderKills++
	}
}

func (r *Report) checkStop(e Event, events []Event, runs []Run, byJob map[string][]Run, end time.Time) {
	held := false
	for _, run := range runs {
		// A run open for longer than a takeover before the stop was cut off by an
		// earlier fault (a database restart), not by this stop.
		if run.PID != e.PID || run.Started.After(e.At) || (!run.Ended.IsZero() && run.Ended.Before(e.At)) ||
			e.At.Sub(run.Started) > r.TakeoverBound {
			continue
		}
		n, ok := next(byJob, run.Job, run.Started)
		if ok && n.Started.Before(e.At) {
			continue // over before the stop
		}
		held = true
		if run.Ended.IsZero() {
			r.violate("run %d of %s by %s (pid %d) recorded no end despite a graceful stop", run.ID, run.Job, e.Pod, e.PID)
			continue
		}
		if !ok {
			if end.Sub(run.Ended) > r.GracefulBound {
				r.violate("%s never ran again after a graceful stop of %s (pid %d)", run.Job, e.Pod, e.PID)
			}
			continue
		}
		from, bound := run.Ended, r.GracefulBound
		if f := faultAfter(events, from, r.TakeoverBound); f != from {
			from, bound = f, r.TakeoverBound // see faultAfter
		}
		d := n.Started.Sub(from)
		if bound == r.GracefulBound {
			r.WorstGraceful = max(r.WorstGraceful, d)
		}
		if d > bound {
			r.violate("%s ran again %v after a graceful stop of its holder %s (pid %d): bound %v (LockAtMostFor waited out?)",
				run.Job, d, e.Pod, e.PID, bound)
		}
	}
	if held {
		r.HolderStops++
	}
}

// checkResume: once the database is back, every job runs again within the
// takeover bound, without any pod being restarted.
func (r *Report) checkResume(e Event, byJob map[string][]Run, end time.Time) {
	for _, job := range Jobs {
		n, ok := next(byJob, job, e.At)
		if !ok {
			if end.Sub(e.At) > r.TakeoverBound {
				r.violate("%s never ran again after the database restart", job)
			}
			continue
		}
		d := n.Started.Sub(e.At)
		r.WorstResume = max(r.WorstResume, d)
		if d > r.TakeoverBound {
			r.violate("%s ran again %v after the database came back: bound %v", job, d, r.TakeoverBound)
		}
	}
}

// String prints the figures.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pods %d, runs %d, SIGKILLs %d (%d of a holder), graceful stops %d (%d of a holder), "+
		"network faults %d, database restarts %d\n",
		r.Pods, r.Runs, r.Kills, r.HolderKills, r.Stops, r.HolderStops, r.NetFaults, r.DBRestarts)
	fmt.Fprintf(&b, "overlaps %d; worst takeover after SIGKILL %v (bound %v); worst next run after graceful stop %v (bound %v)",
		r.Overlaps, r.WorstTakeover.Round(time.Millisecond), r.TakeoverBound, r.WorstGraceful.Round(time.Millisecond), r.GracefulBound)
	if r.DBRestarts > 0 {
		fmt.Fprintf(&b, "; worst resume after database restart %v", r.WorstResume.Round(time.Millisecond))
	}
	pods := make([]string, 0, len(r.RunsPerPod))
	for pod := range r.RunsPerPod {
		pods = append(pods, pod)
	}
	slices.Sort(pods)
	b.WriteString("\nruns per pod:")
	for _, pod := range pods {
		fmt.Fprintf(&b, " %s %v", pod, r.RunsPerPod[pod])
	}
	fmt.Fprintf(&b, "\nviolations: %d", len(r.Violations))
	const shown = 20
	for _, v := range r.Violations[:min(shown, len(r.Violations))] {
		b.WriteString("\n  " + v)
	}
	if len(r.Violations) > shown {
		fmt.Fprintf(&b, "\n  ... and %d more", len(r.Violations)-shown)
	}
	return b.String()
}
