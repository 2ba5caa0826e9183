package shedlock

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/eventqueue"
)

// Listener receives what an executor's locks do, for metrics and traces (see the
// shedlockprom and shedlockotel modules). Register it with WithListener.
//
// Events are delivered in the order they happened, one at a time, from a
// goroutine of the executor's own, never from the goroutine that runs the lock:
// a slow listener delays only later events, and cannot hold a lock longer,
// delay a task or an extension. Up to 4096 events wait for a listener that
// falls behind. Beyond that, runs are dropped whole, never in part: a run
// whose EventAttempt finds no room for its usual four events is dropped with
// every later event of its own, while the events of runs already admitted are
// always queued, so that a listener sees each run from its first event to its
// last, or not at all, and a gauge or a span built from them is never left
// wrong. Listeners are then told how many events were dropped by an
// EventDropped, delivered before the next event or, when none comes, once the
// queue has emptied. A panic in OnEvent is
// recovered and logged. Events can arrive after Run has returned; once Stop
// returns (within its ctx), every event of the runs it waited for has been
// delivered.
type Listener interface {
	// OnEvent receives one event. ctx is the context the run was started with
	// (Run's, or the executor's own for Wrap, WithLock and FixedDelay jobs), for
	// its values, such as a trace span: it may have ended by the time OnEvent runs.
	// A Leader's events carry context.Background().
	OnEvent(ctx context.Context, ev Event)
}

// ListenerFunc adapts a function to Listener.
type ListenerFunc func(ctx context.Context, ev Event)

// OnEvent calls f.
func (f ListenerFunc) OnEvent(ctx context.Context, ev Event) { f(ctx, ev) }

// Event is one thing an executor did with a lock.
//
// A run's events come in this order. EventAttempt, then one of EventSkipped,
// EventStoreError or EventAcquired. After EventAcquired: EventCatchUp for a
// CatchUp job's run of a missed or failed fire time, EventExtended and
// EventExtendFailed as the lock is extended, at most one of EventLost and
// EventExpired, then EventFinished (absent only when Stop began while the lock
// was being taken, and the task did not run), and last exactly one of
// EventReleased and EventReleaseFailed.
//
// A Leader's term is a run of two events: EventLeadershipGained, then
// EventLeadershipLost. EventDropped and EventMissedFireTime belong to no run.
type Event struct {
	Kind EventKind
	// Run is the same for every event of one attempt.
	Run RunID
	// Config is the job's lock.
	Config LockConfig
	// Time is when the event happened.
	Time time.Time
	// Duration is, for EventSkipped, EventStoreError and EventAcquired, how long
	// the attempt took; for EventFinished, how long the task ran; for
	// EventReleased and EventReleaseFailed, how long the lock was held (from
	// the attempt's start); for EventExtended and EventExtendFailed, how long
	// the Extend took; for EventLeadershipGained, how long the TryLock took; for
	// EventLeadershipLost, how long the term lasted.
	Duration time.Duration
	// Until is, for EventAcquired and EventExtended, when the task's context ends
	// unless the lock is extended again: a margin before the lock's own end.
	Until time.Time
	// Skip says why the task did not run (EventSkipped).
	Skip SkipReason
	// Result says how the task ended (EventFinished).
	Result TaskResult
	// Err is the store's error (EventStoreError, EventExtendFailed,
	// EventReleaseFailed), the task's (EventFinished), or the cause the task's
	// context ended with (EventLost, EventExpired).
	Err error
	// Cause is, for EventFinished, the cause of the task's context if it had
	// ended before the task returned: ErrStopped, ErrLockExpired, ErrLockLost or
	// the caller's.
	Cause error
	// KeepAlive is, for EventExtended, EventExtendFailed and EventLost, whether
	// keep-alive made the Extend (false: the task, through LockFromContext).
	KeepAlive bool
	// Dropped counts the events dropped since the last EventDropped
	// (EventDropped): every event of the runs dropped whole.
	Dropped uint64
	// Fence is, for EventLeadershipGained and EventLeadershipLost, the term's
	// fencing token (0 where the store keeps none).
	Fence int64
	// FireTime is, for EventCatchUp and EventMissedFireTime, the fire time the
	// run stands for, or that was missed.
	FireTime time.Time
}

// EventKind names an event. Its String is the snake_case form used in metric labels.
type EventKind uint8

const (
	// EventAttempt: a run begins; the lock is about to be tried.
	EventAttempt EventKind = iota + 1
	// EventSkipped: the task does not run (see Event.Skip).
	EventSkipped
	// EventStoreError: taking the lock failed; the task does not run.
	EventStoreError
	// EventAcquired: the lock is taken; the task runs next.
	EventAcquired
	// EventExtended: the lock was extended, and the task's deadline moved to Until.
	EventExtended
	// EventExtendFailed: an Extend failed without saying the lock is lost;
	// keep-alive retries while the lock has time left.
	EventExtendFailed
	// EventLost: the lock is no longer this run's (an Extend was refused, or
	// keep-alive could not extend it in time); the task's context has ended with
	// an ErrLockLost cause.
	EventLost
	// EventExpired: without keep-alive, the lock's LockAtMostFor ran out while the
	// task ran; its context has ended with the cause ErrLockExpired.
	EventExpired
	// EventFinished: the task returned, failed, panicked or called runtime.Goexit.
	EventFinished
	// EventReleased: the lock was released.
	EventReleased
	// EventReleaseFailed: the release failed; the lock stays until its end.
	EventReleaseFailed
	// EventDropped: Dropped events were dropped because listeners fell behind:
	// whole runs, of which the listeners saw no event. It belongs to no run.
	EventDropped
	// EventLeadershipGained: a Leader took its lease and leads (see
	// WithLeaderListener). Config is the lease (Name, LockAtMostFor); Run is
	// the term, Fence its token, Until when its context ends unless renewed.
	EventLeadershipGained
	// EventLeadershipLost: the term's context has ended; Err is its cause
	// (wrapping ErrLockLost, or ErrStopped) and Duration how long it led.
	EventLeadershipLost
	// EventCatchUp: a CatchUp job's run took its lock for a fire time other
	// than the one now (one missed while no instance was up, or whose run
	// failed): FireTime is the fire time it stands for. It comes right after
	// the run's EventAcquired; the run's other events follow as usual.
	EventCatchUp
	// EventMissedFireTime: a CatchUp job's fire time passed its window without
	// a run that succeeded; FireTime is that fire time. It belongs to no run,
	// and each instance that finds the fire time missed sends it once.
	EventMissedFireTime
)

var eventKindNames = [...]string{
	EventAttempt: "attempt", EventSkipped: "skipped", EventStoreError: "store_error",
	EventAcquired: "acquired", EventExtended: "extended", EventExtendFailed: "extend_failed",
	EventLost: "lost", EventExpired: "expired", EventFinished: "finished",
	EventReleased: "released", EventReleaseFailed: "release_failed", EventDropped: "dropped",
	EventLeadershipGained: "leadership_gained", EventLeadershipLost: "leadership_lost",
	EventCatchUp: "catch_up", EventMissedFireTime: "missed_fire_time",
}

func (k EventKind) String() string { return enumName(eventKindNames[:], int(k), "EventKind") }

// SkipReason says why a run did not run its task.
type SkipReason uint8

const (
	// SkipHeldElsewhere: the lock is held, by another instance or an earlier
	// acquisition not yet released.
	SkipHeldElsewhere SkipReason = iota + 1
	// SkipRunningHere: this executor is still running the same name.
	SkipRunningHere
	// SkipLate: the attempt came after its fire time's window (see
	// ContextWithFireTime): another instance may have run this fire time and
	// released the lock already.
	SkipLate
	// SkipPaused: an operator paused the job (Controller.Pause); the store
	// refused the attempt with ErrPaused.
	SkipPaused
	// SkipRunNowDone: a run made for a run-now request (WithRunNowCheck) took
	// the lock after another instance had run the last request: it released
	// the lock and ran nothing.
	SkipRunNowDone
)

var skipReasonNames = [...]string{SkipHeldElsewhere: "held_elsewhere", SkipRunningHere: "running_here", SkipLate: "late",
	SkipPaused: "paused", SkipRunNowDone: "run_now_done"}

func (r SkipReason) String() string { return enumName(skipReasonNames[:], int(r), "SkipReason") }

// TaskResult says how a task ended.
type TaskResult uint8

const (
	// TaskOK: the task returned nil.
	TaskOK TaskResult = iota + 1
	// TaskFailed: the task returned an error, or called runtime.Goexit.
	TaskFailed
	// TaskPanicked: the task panicked; Event.Err wraps ErrTaskPanicked.
	TaskPanicked
	// TaskCancelled: the task returned context.Canceled (or ErrStopped) after its
	// caller or Stop ended its context, as asked: not a failure.
	TaskCancelled
)

var taskResultNames = [...]string{TaskOK: "ok", TaskFailed: "error", TaskPanicked: "panic", TaskCancelled: "cancelled"}

func (r TaskResult) String() string { return enumName(taskResultNames[:], int(r), "TaskResult") }

// enumName returns names[i]: "" for the zero value (the field does not apply),
// typ(i) for a value it does not know.
func enumName(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}

// RunID identifies one attempt of one executor, or one term of one Leader:
// every event of the attempt (or term) carries it. It is comparable, for use as a map key; two executors' runs never
// share one.
type RunID struct {
	seq *runSeq // its executor's, which the ID does not keep alive
	n   uint64
}

// runSeq numbers an executor's runs.
type runSeq struct{ n atomic.Uint64 }

func (s *runSeq) next() RunID { return RunID{s, s.n.Add(1)} }

// String returns the attempt's number within its executor.
func (id RunID) String() string { return strconv.FormatUint(id.n, 10) }

// newEventQueue returns the executor's delivery to listeners; nil without any.
func newEventQueue(listeners []Listener, log *slog.Logger) *eventqueue.Queue[Event] {
	if len(listeners) == 0 {
		return nil
	}
	send := func(ctx context.Context, ev Event) {
		for _, l := range listeners {
			sendOne(ctx, log, l, ev)
		}
	}
	dropped := func(ctx context.Context, n uint64) {
		log.Warn("shedlock: listeners fell behind; events dropped", "dropped", n)
		send(ctx, Event{Kind: EventDropped, Time: time.Now(), Dropped: n})
	}
	return eventqueue.New(placeInRun, send, dropped)
}

// placeInRun tells the queue an event's run and its place in it (see Event).
func placeInRun(ev Event) (uint64, eventqueue.Place) {
	switch ev.Kind {
	case EventAttempt, EventLeadershipGained:
		return ev.Run.n, eventqueue.First
	case EventSkipped, EventStoreError, EventReleased, EventReleaseFailed, EventLeadershipLost:
		return ev.Run.n, eventqueue.Last
	case EventMissedFireTime: // a run of one event, never dropped: one per fire time missed
		return 0, eventqueue.Last
	}
	return ev.Run.n, eventqueue.Within
}

func sendOne(ctx context.Context, log *slog.Logger, l Listener, ev Event) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("shedlock: listener panicked; the event is lost to it",
				"lock", ev.Config.Name, "event", ev.Kind.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	l.OnEvent(ctx, ev)
}
