package shedlock

import (
	"slices"
	"strconv"
	"sync"

	"github.com/shedlock-go/shedlock/internal/inflight"
	"github.com/shedlock-go/shedlock/internal/jobname"
)

// runsHere is an executor's marks of the runs under way in this process:
// which names run here, which it won last, which were warned of as late, and
// the holds that Stop must end. It has its own lock; Stop closes it.
type runsHere struct {
	mu      sync.Mutex
	closed  bool
	running map[string]string   // jobname.Key -> name, for names with a run under way here
	wonLast map[string]struct{} // jobname.Keys whose last attempt here took the lock; see inflight.WonLast
	late    map[string]struct{} // jobname.Keys warned of a run late on arrival; see warnLateOnce
	keys    map[string]string   // name -> jobname.Key, for the names runs were made with; see keyLocked
	holds   map[*hold]struct{}  // tasks running: Stop ends their contexts
}

func newRunsHere() *runsHere {
	return &runsHere{running: make(map[string]string), wonLast: make(map[string]struct{}),
		late: make(map[string]struct{}), keys: make(map[string]string), holds: make(map[*hold]struct{})}
}

// enter marks name's key (jobname.Key) as running here, and tells the key and
// the kind of its attempt; entered is false when the name already runs in
// this process: a run that outlived its lock must not be joined by a second
// one.
func (h *runsHere) enter(name string) (key string, entered bool, kind inflight.Kind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key = h.keyLocked(name)
	if _, ok := h.running[key]; ok {
		return key, false, 0
	}
	h.running[key] = name
	if _, ok := h.wonLast[key]; ok {
		return key, true, inflight.WonLast
	}
	return key, true, inflight.Attempt
}

// keyLocked returns name's jobname.Key, computed once per name: every run of
// a job would otherwise fold its name again, and allocate the result. h.mu
// must be held.
func (h *runsHere) keyLocked(name string) string {
	if key, ok := h.keys[name]; ok {
		return key
	}
	if len(h.keys) >= maxWonLast {
		clear(h.keys)
	}
	key := jobname.Key(name)
	h.keys[name] = key
	return key
}

// maxWonLast bounds the names remembered as won: an application that locks a
// name per entity (one per order) would otherwise grow the set for good.
const maxWonLast = 1 << 14

// leave ends key's run here. An attempt that took the lock makes the next one
// a WonLast; one that found it held elsewhere, an Attempt; any other outcome
// (late, a store error) leaves it as it was.
func (h *runsHere) leave(key string, took, heldElsewhere bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case took:
		if len(h.wonLast) >= maxWonLast {
			clear(h.wonLast)
		}
		h.wonLast[key] = struct{}{}
	case heldElsewhere:
		delete(h.wonLast, key)
	}
	delete(h.running, key)
}

// firstLate reports whether key is warned of as late for the first time.
func (h *runsHere) firstLate(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, warned := h.late[key]; warned {
		return false
	}
	if len(h.late) >= maxWonLast {
		clear(h.late)
	}
	h.late[key] = struct{}{}
	return true
}

// addHold makes hd's context end with ErrStopped on Stop, at once if Stop has
// begun. The set is kept here rather than a context.AfterFunc per run: a map
// entry costs a run nothing once the map has grown.
func (h *runsHere) addHold(hd *hold) {
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.holds[hd] = struct{}{}
	}
	h.mu.Unlock()
	if closed {
		hd.stop(ErrStopped)
	}
}

func (h *runsHere) removeHold(hd *hold) {
	h.mu.Lock()
	delete(h.holds, hd)
	h.mu.Unlock()
}

// close ends every running task's context with ErrStopped, and those of runs
// that take their lock after.
func (h *runsHere) close() {
	h.mu.Lock()
	h.closed = true
	holds := make([]*hold, 0, len(h.holds))
	for hd := range h.holds {
		holds = append(holds, hd)
	}
	h.mu.Unlock()
	for _, hd := range holds {
		hd.stop(ErrStopped)
	}
}

// names returns the names running here, quoted and sorted, for Stop's error.
func (h *runsHere) names() []string {
	h.mu.Lock()
	names := make([]string, 0, len(h.running))
	for _, name := range h.running {
		names = append(names, strconv.Quote(name))
	}
	h.mu.Unlock()
	slices.Sort(names)
	return names
}

// isRunning reports whether the name of jobname.Key key runs here now.
func (h *runsHere) isRunning(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.running[key]
	return ok
}
