package shedlocktest

import (
	"testing"
	"time"
)

// testPauseFarFuture pauses until times an operator may type by mistake or
// on purpose: a pause centuries ahead, beyond any store's time to live, must
// still refuse every attempt until Resume, never be dropped at once nor fail.
func testPauseFarFuture(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	for _, until := range []time.Time{
		time.Now().AddDate(300, 0, 0),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		name := "far-" + until.Format("2006")
		job := cfg(name, time.Minute, 0)
		a.pause(t, name, until)
		mustNotLockPaused(t, b, job)
		a.resume(t, name)
		mustLock(t, b, job)
	}
}
