package kvstore

import (
	"fmt"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Hold is what every key-value lock keeps alike of its acquisition: whether
// it is done (released, or found lost), and the mutex that orders its Unlock
// and Extend, so that an Extend can never revive a lock an Unlock has let go.
// A lock has one as a field; the zero Hold is a lock held.
type Hold struct {
	mu   sync.Mutex
	done bool
}

// Enter takes the mutex for an Unlock or an Extend: lockerr.LockLost
// (shedlock.ErrLockLost), and the mutex not taken, once the lock is done.
// Exit gives the mutex back.
func (h *Hold) Enter() error {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return lockerr.LockLost
	}
	return nil
}

// Exit gives back the mutex Enter took.
func (h *Hold) Exit() { h.mu.Unlock() }

// Finish marks the lock done: released, or found lost. Only between Enter
// and Exit.
func (h *Hold) Finish() { h.done = true }

// Check is shedlock.HoldChecker's CheckHeld of the lock named name, whose
// holder relies on it until end, read with the mutex held: nil before,
// lockerr.LockLost once the lock is done, else lockerr.LockExpired. It asks
// no store: a key deleted behind the holder's back is found only by its next
// Extend or Unlock.
func (h *Hold) Check(name string, end func() time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.done:
		return fmt.Errorf("%w: lock %q: released or found lost", lockerr.LockLost, name)
	case !time.Now().Before(end()):
		return fmt.Errorf("%w: lock %q", lockerr.LockExpired, name)
	}
	return nil
}

// Owned is a store's lock that gives its own handle back: the lock itself,
// or the lock a fire lock wraps (nil for a nil one).
type Owned[L any] interface{ Own() *L }

// Own returns the store's handle in held, a lock passed back to the store
// pkg by a request on name (a run-now's MarkRunDone); nameOf reads a
// handle's name. A lock of another store, or of another name, is an error
// wrapping lockerr.InvalidConfig.
func Own[L any](pkg, name string, held any, nameOf func(*L) string) (*L, error) {
	var l *L
	if o, ok := held.(Owned[L]); ok {
		l = o.Own()
	}
	switch {
	case l == nil:
		return nil, fmt.Errorf("%w: run of %q: %T is not a lock of %s", lockerr.InvalidConfig, name, held, pkg)
	case nameOf(l) != name:
		return nil, fmt.Errorf("%w: run of %q: the lock passed is %q's", lockerr.InvalidConfig, name, nameOf(l))
	}
	return l, nil
}
