package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what Analyze found.
type Report struct {
	Pods               int
	Runs               int
	Kills, HolderKills int // SIGKILLs, and those that hit a pod inside a run
	Stops, HolderStops int // SIGTERMs, and those that hit a pod inside a run
	DBRestarts         int
	StoreDown          time.Duration             // how long the database was down in all
	NetFaults          int                       // faults put between a pod and the database
	Overlaps           int                       // runs of a job that began before the one before ended
	Takeovers          int                       // next runs after a SIGKILL of their holder
	WorstTakeover      time.Duration             // SIGKILL of a holder to the job's next start
	WorstTakeoverWhat  string                    // its job and kill
	WorstBeyond        time.Duration             // the dead holder's lock_until to the job's next start
	WorstBeyondAllowed time.Duration             // what that takeover was allowed beyond lock_until
	WorstGraceful      time.Duration             // end of a stopped run to the job's next start, no fault involved
	WorstResume        time.Duration             // database back to the job's next start
	Poll               time.Duration             // a pod's next attempt once the lock is free: Delay + slack
	RunsPerPod         map[string]map[string]int // pod, job: runs
	Violations         []string
}

// analysis is what every check needs.
type analysis struct {
	p      Params
	faults []Fault
	byJob  map[string][]Run
	runs   []Run
	end    time.Time
}

// Analyze checks runs against events. slack is what a pod may take beyond its
// Delay to try again once a lock is free. end is when the supervisor stopped
// acting: a job that had not run again by then is judged only if it was due.
func Analyze(runs []Run, events []Event, p Params, pods int, slack time.Duration, end time.Time) Report {
	r := Report{Pods: pods, Runs: len(runs), Poll: p.Delay + slack, RunsPerPod: map[string]map[string]int{}}
	a := analysis{p: p, byJob: map[string][]Run{}, runs: runs, end: end}
	killedAt := map[int]time.Time{}
	for _, e := range events {
		if e.Kind == Kill {
			killedAt[e.PID] = e.At
		}
		if f, ok := e.Fault(); ok {
			a.faults = append(a.faults, f)
		}
	}
	for _, run := range runs {
		a.byJob[run.Job] = append(a.byJob[run.Job], run)
		if r.RunsPerPod[run.Pod] == nil {
			r.RunsPerPod[run.Pod] = map[string]int{}
		}
		r.RunsPerPod[run.Pod][run.Job]++
	}
	for _, job := range Jobs {
		r.checkOverlaps(a.byJob[job], killedAt, p)
	}
	for _, e := range events {
		switch e.Kind {
		case Kill:
			r.Kills++
			r.checkKill(e, a)
		case Stop:
			r.Stops++
			r.checkStop(e, a)
		case NetFault:
			r.NetFaults++
		case DBRestart:
			r.DBRestarts++
			f, _ := e.Fault()
			r.StoreDown += f.To.Sub(f.From)
			r.checkResume(e, a)
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

// lockUntil returns run's lock_until, or, for a run that did not record one, the
// latest it can be (the lock was taken before the run started).
func (a analysis) lockUntil(run Run) (time.Time, bool) {
	if run.LockUntil.IsZero() {
		return run.Started.Add(a.p.LockAtMostFor), false
	}
	return run.LockUntil, true
}

// checkKill judges, for each run the SIGKILLed pod held a lock for, when the job
// ran again: not before the dead holder's lock_until, and within Takeover.By.
func (r *Report) checkKill(e Event, a analysis) {
	held := false
	for _, run := range a.runs {
		if run.PID != e.PID || !run.Ended.IsZero() {
			continue
		}
		lockUntil, known := a.lockUntil(run)
		if !e.At.Before(lockUntil) {
			continue // its lock had expired: a run left open by an earlier fault, not this kill's
		}
		n, ok := next(a.byJob, run.Job, run.Started)
		if ok && n.Started.Before(e.At) {
			continue // over before the kill: cut off by an earlier fault (checkOverlaps judges it)
		}
		held = true
		if !known {
			r.violate("run %d of %s by %s (pid %d) recorded no lock_until: the store had no lock under the run",
				run.ID, run.Job, e.Pod, e.PID)
		}
		t := Takeover{Job: run.Job, Killed: e.At, LockUntil: lockUntil, Next: n.Started,
			EndLost: !known || StoreDown(a.faults, run.Started, e.At) > 0}
		if v := t.Violation(a.faults, a.p.LockAtMostFor, r.Poll, a.end); v != "" {
			r.violate("%s (holder %s, pid %d)", v, e.Pod, e.PID)
		}
		if !ok {
			continue
		}
		r.Takeovers++
		if d := n.Started.Sub(e.At); d > r.WorstTakeover {
			r.WorstTakeover = d
			r.WorstTakeoverWhat = fmt.Sprintf("%s after SIGKILL of %s, pid %d", run.Job, e.Pod, e.PID)
		}
		if d := n.Started.Sub(lockUntil); d > r.WorstBeyond || r.Takeovers == 1 {
			r.WorstBeyond, r.WorstBeyondAllowed = d, t.By(a.faults, a.p.LockAtMostFor, r.Poll).Sub(lockUntil)
		}
	}
	if held {
		r.HolderKills++
	}
}

// checkStop judges, for each run the stopped pod was in, when the job ran again:
// its lock is released at the run's end, and kept only for LockAtLeastFor.
func (r *Report) checkStop(e Event, a analysis) {
	held := false
	for _, run := range a.runs {
		if run.PID != e.PID || run.Started.After(e.At) || (!run.Ended.IsZero() && run.Ended.Before(e.At)) {
			continue
		}
		if lockUntil, _ := a.lockUntil(run); !e.At.Before(lockUntil) {
			continue // its lock had expired: a run left open by an earlier fault, not this stop's
		}
		n, ok := next(a.byJob, run.Job, run.Started)
		if ok && n.Started.Before(e.At) {
			continue // over before the stop
		}
		held = true
		if run.Ended.IsZero() {
			r.violate("run %d of %s by %s (pid %d) recorded no end despite a graceful stop", run.ID, run.Job, e.Pod, e.PID)
			continue
		}
		w := Wait{Free: run.Ended.Add(a.p.LockAtLeastFor), Since: run.Ended}
		by := RunAgainBy(w, a.faults, a.p.LockAtMostFor, r.Poll)
		if !ok {
			if a.end.After(by) {
				r.violate("%s never ran again after a graceful stop of %s (pid %d)", run.Job, e.Pod, e.PID)
			}
			continue
		}
		d := n.Started.Sub(run.Ended)
		if by.Equal(w.Free.Add(r.Poll)) {
			r.WorstGraceful = max(r.WorstGraceful, d)
		}
		if n.Started.After(by) {
			r.violate("%s ran again %v after a graceful stop of its holder %s (pid %d): allowed %v (LockAtMostFor waited out?)",
				run.Job, d, e.Pod, e.PID, by.Sub(run.Ended))
		}
	}
	if held {
		r.HolderStops++
	}
}

// checkResume: once the database is back, every job runs again without any pod
// being restarted, once whatever lock was held or half taken when it went down
// has expired: LockAtMostFor after it came back at the latest.
func (r *Report) checkResume(e Event, a analysis) {
	w := Wait{Free: e.At.Add(a.p.LockAtMostFor), Since: e.At}
	by := RunAgainBy(w, a.faults, a.p.LockAtMostFor, r.Poll)
	for _, job := range Jobs {
		n, ok := next(a.byJob, job, e.At)
		if !ok {
			if a.end.After(by) {
				r.violate("%s never ran again after the database restart", job)
			}
			continue
		}
		d := n.Started.Sub(e.At)
		r.WorstResume = max(r.WorstResume, d)
		if n.Started.After(by) {
			r.violate("%s ran again %v after the database came back: allowed %v", job, d, by.Sub(e.At))
		}
	}
}

// String prints the figures.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pods %d, runs %d, SIGKILLs %d (%d of a holder), graceful stops %d (%d of a holder), "+
		"network faults %d, database restarts %d (down %v)\n",
		r.Pods, r.Runs, r.Kills, r.HolderKills, r.Stops, r.HolderStops, r.NetFaults, r.DBRestarts, r.StoreDown.Round(time.Millisecond))
	fmt.Fprintf(&b, "overlaps %d; worst next run after graceful stop %v (no fault; allowed LockAtLeastFor + %v)",
		r.Overlaps, r.WorstGraceful.Round(time.Millisecond), r.Poll)
	if r.DBRestarts > 0 {
		fmt.Fprintf(&b, "; worst resume after database restart %v", r.WorstResume.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\ntakeovers after SIGKILL %d", r.Takeovers)
	if r.Takeovers > 0 {
		fmt.Fprintf(&b, ": worst %v after the kill (%s); worst %v beyond the dead holder's lock_until (allowed %v)",
			r.WorstTakeover.Round(time.Millisecond), r.WorstTakeoverWhat,
			r.WorstBeyond.Round(time.Millisecond), r.WorstBeyondAllowed.Round(time.Millisecond))
	}
	b.WriteString("\n")
	pods := make([]string, 0, len(r.RunsPerPod))
	for pod := range r.RunsPerPod {
		pods = append(pods, pod)
	}
	slices.Sort(pods)
	b.WriteString("runs per pod:")
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
