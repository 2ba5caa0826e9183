package shedlockhttp

import (
	"strconv"
	"time"
)

// ActionKind names what an operator asks of a lock.
type ActionKind uint8

const (
	// ActionPause pauses the job on every instance (shedlock.Controller.Pause),
	// until Action.Until, or until resumed when Until is zero.
	ActionPause ActionKind = iota + 1
	// ActionResume ends a pause (shedlock.Controller.Resume).
	ActionResume
	// ActionRunNow asks for one run on whichever instance checks first
	// (shedlock.Controller.RunNow).
	ActionRunNow
	// ActionUnlock frees the acquisition the page showed, never a newer one
	// (shedlock.Admin.ForceUnlockSeen): safe only when its holder is dead.
	ActionUnlock
)

var actionNames = [...]string{ActionPause: "pause", ActionResume: "resume", ActionRunNow: "run", ActionUnlock: "unlock"}

// String returns the action's name as the API's paths have it: pause,
// resume, run, unlock.
func (k ActionKind) String() string {
	if int(k) < len(actionNames) && actionNames[k] != "" {
		return actionNames[k]
	}
	return "ActionKind(" + strconv.Itoa(int(k)) + ")"
}

// actionKinds are the kinds, in the order the page offers them.
var actionKinds = []ActionKind{ActionPause, ActionResume, ActionRunNow, ActionUnlock}

// Action is one thing a request asks, as the authorize hook sees it.
type Action struct {
	Kind ActionKind
	// Name is the lock's name. It is empty when the page asks which actions
	// to show this request at all.
	Name string
	// Until is, for ActionPause, when the pause ends; zero: until resumed.
	Until time.Time
}
