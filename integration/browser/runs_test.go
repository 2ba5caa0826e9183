package browser

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/shedlock-go/shedlock"
)

// jobRun is one run of a job, as the journal tells it.
type jobRun struct {
	pod         string
	start, done time.Time // done: zero until the task completed
	hung        bool      // it took the hang file, to be killed mid-run
	// lockLost: the run's lock ran out or was lost before its release
	// (lockLostEvents), as on a machine stalled past LockAtMostFor: it no
	// longer excluded other runs, and its request may be run again.
	lockLost bool
}

// runsOf returns job's runs in the order they began. An event of a pod's
// lock belongs to its run under way at the event's time: the events come
// from the executor's listener, late and in a goroutine of their own.
func runsOf(entries []entry, job string) []jobRun {
	var runs []jobRun
	for _, e := range entries {
		if e.job == job && e.what == jStart {
			runs = append(runs, jobRun{pod: e.pod, start: e.at})
		}
	}
	slices.SortStableFunc(runs, func(a, b jobRun) int { return a.start.Compare(b.start) })
	for _, e := range entries {
		if e.job != job {
			continue
		}
		i := lastRunOf(runs, e.pod, e.at)
		switch {
		case i < 0:
		case e.what == jDone:
			runs[i].done = e.at
		case e.what == jHang:
			runs[i].hung = true
		case slices.Contains(lockLostEvents, e.what):
			runs[i].lockLost = true
		}
	}
	return runs
}

// lastRunOf is the index of pod's last run begun at or before at; -1 if none.
func lastRunOf(runs []jobRun, pod string, at time.Time) int {
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].pod == pod && !runs[i].start.After(at) {
			return i
		}
	}
	return -1
}

// tally is what the runs of a job came to.
type tally struct {
	completed int // runs whose task completed, their lock held to the end
	lockLost  int // runs whose lock ran out or was lost: not counted
	hung      int // runs killed mid-run
}

func tallyOf(runs []jobRun) tally {
	var n tally
	for _, r := range runs {
		switch {
		case r.hung:
			n.hung++
		case r.lockLost:
			n.lockLost++
		case !r.done.IsZero():
			n.completed++
		}
	}
	return n
}

// assertExactly checks that job's runs completed are exactly want. A run
// whose lock ran out (a machine stalled past LockAtMostFor) is not counted,
// and its request may run again (WithRunNowCheck): then the runs completed
// are want or more, up to want plus such runs, and the test says so.
func assertExactly(t *testing.T, runs []jobRun, job string, want int) tally {
	t.Helper()
	n := tallyOf(runs)
	if n.lockLost == 0 {
		assert.Equal(t, want, n.completed, "%s: runs completed", job)
		return n
	}
	t.Logf("%s: %d runs lost their lock before their release (the machine stalled past LockAtMostFor): "+
		"their requests may have run again", job, n.lockLost)
	assert.GreaterOrEqual(t, n.completed, want-n.lockLost, "%s: runs completed", job)
	assert.LessOrEqual(t, n.completed, want, "%s: runs completed", job)
	return n
}

// assertOneAtATime checks that job's runs never overlapped: each began after
// the one before completed; after a hung run, once its lock could have run
// out; after a run whose lock ran out, at any time.
func assertOneAtATime(t *testing.T, runs []jobRun, job shedlock.LockConfig) {
	t.Helper()
	for i := 1; i < len(runs); i++ {
		prev, next := runs[i-1], runs[i]
		switch {
		case prev.hung:
			// Its lock ran out job.LockAtMostFor after it was taken, a
			// little before the run's start was written.
			assert.Greater(t, next.start.Sub(prev.start), job.LockAtMostFor-time.Second,
				"%s began %s %v after the hung run of %s", next.pod, job.Name, next.start.Sub(prev.start), prev.pod)
		case prev.lockLost:
		case prev.done.IsZero() || prev.done.After(next.start):
			t.Errorf("%s began %s at %v while %s's run, begun at %v, was under way", next.pod, job.Name,
				next.start.Format(time.StampMicro), prev.pod, prev.start.Format(time.StampMicro))
		}
	}
}
