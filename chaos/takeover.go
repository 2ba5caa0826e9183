package chaos

import (
	"fmt"
	"slices"
	"time"
)

// Fault is a span of database time during which pods could not use the store.
type Fault struct {
	From, To time.Time
	// Outage: no pod could reach the store (the database was down). Otherwise the
	// fault was on one pod's connections, and the others went on as usual.
	Outage bool
}

// Wait says how a job's lock left its last holder.
type Wait struct {
	// Free is when the lock is free at the latest if no fault intervenes: the dead
	// holder's lock_until, or the end of a released lock's LockAtLeastFor.
	Free time.Time
	// Since is the first moment at which a fault on one pod's connections could
	// leave the lock held with no run under it: the dead holder's lock_until (before
	// it, every acquire fails anyway), or the end of the run whose release follows.
	Since time.Time
}

// RunAgainBy returns the latest time at which the job may start again: poll after
// the lock is free (a pod's next attempt, with slack for a loaded machine),
// pushed back by every outage that began before then for as long as it lasted
// after the lock was free. A fault on one pod's connections that was in force
// after w.Since and began before that time may have lost the answer to an
// acquire or a release that the database carried out: that lock is then held,
// with no run under it, until its lock_until, at most lockAtMostFor after the
// fault ended, and the wait starts again from there.
func RunAgainBy(w Wait, faults []Fault, lockAtMostFor, poll time.Duration) time.Time {
	outages := outagesOf(faults)
	free := w.Free
	for {
		by := pushBack(free, free.Add(poll), outages)
		moved := false
		for _, f := range faults {
			if f.Outage || f.To.Before(w.Since) || !f.From.Before(by) {
				continue
			}
			if held := f.To.Add(lockAtMostFor); held.After(free) {
				free, moved = held, true
			}
		}
		if !moved {
			return by
		}
	}
}

// Takeover is what the journal tells of a job whose holder was SIGKILLed.
type Takeover struct {
	Job       string
	Killed    time.Time // the holder was dead by then
	LockUntil time.Time // the dead holder's lock_until, read under its lock
	Next      time.Time // the job's next start; zero: none by the end of the run
	// EndLost: the store was down during the dead holder's run, which may have
	// failed to record its end and then released its lock before the kill. A
	// start before LockUntil is then no proof of a broken lock.
	EndLost bool
}

// By returns the latest time at which the job may start again.
func (t Takeover) By(faults []Fault, lockAtMostFor, poll time.Duration) time.Time {
	return RunAgainBy(Wait{Free: t.LockUntil, Since: t.LockUntil}, faults, lockAtMostFor, poll)
}

// Violation judges the takeover: a start before the dead holder's lock_until
// broke mutual exclusion (the lock was taken while still held), and a start
// after By, or none by end when end is past By, came too late. It returns ""
// when neither happened.
func (t Takeover) Violation(faults []Fault, lockAtMostFor, poll time.Duration, end time.Time) string {
	by := t.By(faults, lockAtMostFor, poll)
	if t.Next.IsZero() {
		if end.After(by) {
			return fmt.Sprintf("%s never ran again after SIGKILL of its holder (lock_until %s, due by %s)",
				t.Job, clock(t.LockUntil), clock(by))
		}
		return ""
	}
	if t.Next.Before(t.LockUntil) && !t.EndLost {
		return fmt.Sprintf("%s ran again %v after SIGKILL of its holder, %v BEFORE the dead holder's lock_until: "+
			"the lock was taken while held", t.Job, t.Next.Sub(t.Killed), t.LockUntil.Sub(t.Next))
	}
	if t.Next.After(by) {
		return fmt.Sprintf("%s ran again %v after SIGKILL of its holder, %v beyond its lock_until "+
			"(allowed %v: %v poll + %v store down, or a lock whose answer a fault lost)",
			t.Job, t.Next.Sub(t.Killed), t.Next.Sub(t.LockUntil), by.Sub(t.LockUntil), poll,
			StoreDown(faults, t.LockUntil, by))
	}
	return ""
}

// clock prints a database time of day, as the journal's rows show it.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// pushBack moves by later by the time the store was down after free, for every
// outage (sorted by start) that began before by: no pod can take a lock then.
func pushBack(free, by time.Time, outages []Fault) time.Time {
	counted := free // outages may overlap: count each moment once
	for _, o := range outages {
		if !o.From.Before(by) {
			break
		}
		if start := later(o.From, counted); o.To.After(start) {
			by = by.Add(o.To.Sub(start))
			counted = o.To
		}
	}
	return by
}

// StoreDown returns how long no pod could reach the store between from and to.
func StoreDown(faults []Fault, from, to time.Time) time.Duration {
	var down time.Duration
	counted := from
	for _, o := range outagesOf(faults) {
		start, stop := later(o.From, counted), o.To
		if stop.After(to) {
			stop = to
		}
		if stop.After(start) {
			down += stop.Sub(start)
			counted = stop
		}
	}
	return down
}

// outagesOf returns the outages among faults, by start.
func outagesOf(faults []Fault) []Fault {
	var outages []Fault
	for _, f := range faults {
		if f.Outage {
			outages = append(outages, f)
		}
	}
	slices.SortFunc(outages, func(a, b Fault) int { return a.From.Compare(b.From) })
	return outages
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
