package shedlockhttp

import (
	"context"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
)

// How much a Recorder keeps: enough for a timeline of the last minutes of a
// busy process, in bounded memory.
const (
	keptHolds  = 1000
	keptTerms  = 200
	keptMissed = 200
	keptEvents = 200
)

// Recorder is a shedlock.Listener that keeps what this process's executors
// and leaders did lately, for the dashboard: the last 1000 holds, 200 leader
// terms, 200 missed fire times and 200 failures, plus each job's last run
// and last skip here. Pass it to shedlock.WithListener (and to
// shedlock.WithLeaderListener for leaders), then to WithRecorder. One
// Recorder may serve several executors. It is safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	open      map[shedlock.RunID]*Hold
	openTerms map[shedlock.RunID]*Term
	holds     ring[Hold]
	terms     ring[Term]
	missed    ring[Missed]
	events    ring[Notable]
	lastRun   map[string]Hold
	lastSkip  map[string]Skip
}

// Hold is one run's hold of its lock in this process.
type Hold struct {
	Name string `json:"name"`
	// Start is when the lock was taken; End when it was released (zero while
	// held).
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Result is how the task ended ("ok", "error", "panic", "cancelled"), or
	// "" while it runs.
	Result string `json:"result,omitempty"`
	// Lost reports that the lock ended under the task (lost or expired).
	Lost bool `json:"lost,omitempty"`
	// CatchUp is the missed or failed fire time the run stood for, if any.
	CatchUp time.Time `json:"catch_up,omitzero"`
}

// Term is one leadership term of a Leader of this process.
type Term struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Fence is the term's fencing token, where the store keeps one.
	Fence int64 `json:"fence,omitempty"`
	// Cause is why the term ended.
	Cause string `json:"cause,omitempty"`
}

// Missed is a fire time of a CatchUp job that passed its window with no run
// that succeeded (shedlock.EventMissedFireTime).
type Missed struct {
	Name     string    `json:"name"`
	FireTime time.Time `json:"fire_time"`
	Found    time.Time `json:"found"`
}

// Notable is an event an operator should see: a store error, a lost or
// expired lock, a failed release or extension, a failed task, dropped events.
type Notable struct {
	Name  string    `json:"name,omitempty"`
	Kind  string    `json:"kind"`
	Time  time.Time `json:"time"`
	Error string    `json:"error,omitempty"`
}

// Skip is the last time a job's run was skipped here, and why.
type Skip struct {
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{
		open: map[shedlock.RunID]*Hold{}, openTerms: map[shedlock.RunID]*Term{},
		holds: newRing[Hold](keptHolds), terms: newRing[Term](keptTerms),
		missed: newRing[Missed](keptMissed), events: newRing[Notable](keptEvents),
		lastRun: map[string]Hold{}, lastSkip: map[string]Skip{},
	}
}

// OnEvent implements shedlock.Listener.
func (r *Recorder) OnEvent(_ context.Context, ev shedlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ev.Config.Name
	switch ev.Kind {
	case shedlock.EventAcquired:
		r.open[ev.Run] = &Hold{Name: name, Start: ev.Time}
	case shedlock.EventCatchUp:
		if h := r.open[ev.Run]; h != nil {
			h.CatchUp = ev.FireTime
		}
	case shedlock.EventLost, shedlock.EventExpired:
		if h := r.open[ev.Run]; h != nil {
			h.Lost = true
		}
		r.notable(ev)
	case shedlock.EventFinished:
		if h := r.open[ev.Run]; h != nil {
			h.Result = ev.Result.String()
		}
		if ev.Result == shedlock.TaskFailed || ev.Result == shedlock.TaskPanicked {
			r.notable(ev)
		}
	case shedlock.EventReleased, shedlock.EventReleaseFailed:
		r.closeHold(ev)
	case shedlock.EventSkipped:
		r.lastSkip[name] = Skip{Time: ev.Time, Reason: ev.Skip.String()}
	case shedlock.EventStoreError, shedlock.EventExtendFailed, shedlock.EventDropped:
		r.notable(ev)
	case shedlock.EventLeadershipGained:
		r.openTerms[ev.Run] = &Term{Name: name, Start: ev.Time, Fence: ev.Fence}
	case shedlock.EventLeadershipLost:
		r.closeTerm(ev)
	case shedlock.EventMissedFireTime:
		r.missed.push(Missed{Name: name, FireTime: ev.FireTime, Found: ev.Time})
	}
}

func (r *Recorder) closeHold(ev shedlock.Event) {
	h := r.open[ev.Run]
	if h == nil {
		return
	}
	delete(r.open, ev.Run)
	h.End = ev.Time
	r.holds.push(*h)
	r.lastRun[h.Name] = *h
	if ev.Kind == shedlock.EventReleaseFailed {
		r.notable(ev)
	}
}

func (r *Recorder) closeTerm(ev shedlock.Event) {
	t := r.openTerms[ev.Run]
	if t == nil {
		t = &Term{Name: ev.Config.Name, Start: ev.Time.Add(-ev.Duration), Fence: ev.Fence}
	}
	delete(r.openTerms, ev.Run)
	t.End = ev.Time
	if ev.Err != nil {
		t.Cause = ev.Err.Error()
	}
	r.terms.push(*t)
}

func (r *Recorder) notable(ev shedlock.Event) {
	n := Notable{Name: ev.Config.Name, Kind: ev.Kind.String(), Time: ev.Time}
	if ev.Err != nil {
		n.Error = ev.Err.Error()
	}
	if ev.Kind == shedlock.EventDropped {
		n.Error = "listeners fell behind: events of whole runs dropped"
	}
	r.events.push(n)
}

// record is what a Recorder holds at one moment, oldest first.
type record struct {
	Holds    []Hold          `json:"holds"`
	Terms    []Term          `json:"terms"`
	Missed   []Missed        `json:"missed"`
	Events   []Notable       `json:"events"`
	LastRun  map[string]Hold `json:"-"`
	LastSkip map[string]Skip `json:"-"`
}

// snapshot copies what r holds: holds and terms under way last, their End
// zero.
func (r *Recorder) snapshot() record {
	if r == nil {
		return record{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := record{Holds: r.holds.all(), Terms: r.terms.all(), Missed: r.missed.all(), Events: r.events.all(),
		LastRun: make(map[string]Hold, len(r.lastRun)), LastSkip: make(map[string]Skip, len(r.lastSkip))}
	for _, h := range r.open {
		rec.Holds = append(rec.Holds, *h)
	}
	for _, t := range r.openTerms {
		rec.Terms = append(rec.Terms, *t)
	}
	for k, v := range r.lastRun {
		rec.LastRun[k] = v
	}
	for k, v := range r.lastSkip {
		rec.LastSkip[k] = v
	}
	return rec
}
