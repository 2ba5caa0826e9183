package chaos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/chaos"
)

// The timings of `make chaos`: LockAtMostFor 5s, Delay 300ms, slack 2s.
const (
	lockAtMostFor = 5 * time.Second
	poll          = 300*time.Millisecond + 2*time.Second
)

func TestTakeoverViolation(t *testing.T) {
	kill := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return kill.Add(d) }
	outage := func(from, to time.Duration) chaos.Fault { return chaos.Fault{From: at(from), To: at(to), Outage: true} }
	netFault := func(from, to time.Duration) chaos.Fault { return chaos.Fault{From: at(from), To: at(to)} }
	cases := []struct {
		name      string
		lockUntil time.Duration // after the kill
		next      time.Duration // after the kill; 0: none
		endLost   bool
		faults    []chaos.Fault
		end       time.Duration // after the kill: when the journal stops telling
		want      string        // part of the violation; "": none
	}{
		{name: "kill, no outage", lockUntil: 4800 * time.Millisecond, next: 5100 * time.Millisecond},
		{name: "kill, no outage, last moment", lockUntil: 4800 * time.Millisecond, next: 4800*time.Millisecond + poll},
		{name: "kill, no outage, too late", lockUntil: 4800 * time.Millisecond, next: 4800*time.Millisecond + poll + time.Millisecond,
			want: "beyond its lock_until"},
		{
			// The run that failed `make chaos`: the database went down 4.6s after
			// the kill and answered again about 5s later.
			name: "kill, then an outage inside the window", lockUntil: 5 * time.Second, next: 9850 * time.Millisecond,
			faults: []chaos.Fault{outage(4600*time.Millisecond, 9700*time.Millisecond)},
		},
		{
			name: "kill, then an outage, then too late", lockUntil: 5 * time.Second, next: 9700*time.Millisecond + poll + time.Millisecond,
			faults: []chaos.Fault{outage(4600*time.Millisecond, 9700*time.Millisecond)}, want: "4.7s store down",
		},
		{
			// Pods polled again once the store was back, long before lock_until.
			name: "an outage over before lock_until counts for nothing", lockUntil: 4 * time.Second, next: 4*time.Second + poll + time.Millisecond,
			faults: []chaos.Fault{outage(time.Second, 3*time.Second)}, want: "beyond its lock_until",
		},
		{
			// By the time the store went down the job should have run.
			name: "an outage after the deadline counts for nothing", lockUntil: 4 * time.Second, next: 12 * time.Second,
			faults: []chaos.Fault{outage(4*time.Second+poll+time.Millisecond, 11*time.Second)}, want: "beyond its lock_until",
		},
		{
			name: "overlapping outages count once", lockUntil: 4 * time.Second, next: 4*time.Second + poll + 3*time.Second + time.Millisecond,
			faults: []chaos.Fault{outage(5*time.Second, 7*time.Second), outage(6*time.Second, 8*time.Second)}, want: "3s store down",
		},
		{
			name: "takeover before lock_until", lockUntil: 4800 * time.Millisecond, next: 4799 * time.Millisecond,
			want: "BEFORE the dead holder's lock_until",
		},
		{
			name: "takeover before lock_until, even with an outage", lockUntil: 4800 * time.Millisecond, next: 4 * time.Second,
			faults: []chaos.Fault{outage(time.Second, 2*time.Second)}, want: "BEFORE the dead holder's lock_until",
		},
		{
			name: "takeover before lock_until of a run that may have released early", lockUntil: 4800 * time.Millisecond,
			next: 4 * time.Second, endLost: true,
		},
		{name: "far beyond, no outage", lockUntil: 4800 * time.Millisecond, next: 30 * time.Second, want: "beyond its lock_until"},
		{
			// A lost answer to an acquire after lock_until: that lock lives on.
			name: "net fault after lock_until", lockUntil: 4800 * time.Millisecond, next: 5500*time.Millisecond + lockAtMostFor + poll,
			faults: []chaos.Fault{netFault(5*time.Second, 5500*time.Millisecond)},
		},
		{
			// While the dead holder's lock was held, every acquire failed anyway.
			name: "net fault before lock_until counts for nothing", lockUntil: 4800 * time.Millisecond, next: 9 * time.Second,
			faults: []chaos.Fault{netFault(time.Second, 2*time.Second)}, want: "beyond its lock_until",
		},
		{
			name: "never ran again", lockUntil: 4800 * time.Millisecond, end: 4800*time.Millisecond + poll + time.Millisecond,
			want: "never ran again",
		},
		{name: "not run again, not yet due", lockUntil: 4800 * time.Millisecond, end: 4800*time.Millisecond + poll},
		{
			name: "not run again, due later for an outage", lockUntil: 4800 * time.Millisecond, end: 12 * time.Second,
			faults: []chaos.Fault{outage(4600*time.Millisecond, 9700*time.Millisecond)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := chaos.Takeover{Job: "orderTimeoutCancelJob", Killed: kill, LockUntil: at(c.lockUntil), EndLost: c.endLost}
			if c.next != 0 {
				tk.Next = at(c.next)
			}
			end := at(c.end)
			if c.end == 0 {
				end = at(time.Minute)
			}
			got := tk.Violation(c.faults, lockAtMostFor, poll, end)
			switch {
			case c.want == "" && got != "":
				t.Errorf("want no violation, got %q", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("want a violation with %q, got %q", c.want, got)
			}
		})
	}
}

func TestStoreDown(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	faults := []chaos.Fault{
		{From: at(2), To: at(4), Outage: true},
		{From: at(3), To: at(6), Outage: true}, // overlaps the first
		{From: at(0), To: at(20)},              // one pod's fault: the store was up
		{From: at(10), To: at(12), Outage: true},
	}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{{0, 20, 6 * time.Second}, {5, 11, 2 * time.Second}, {6, 10, 0}, {0, 3, time.Second}} {
		if got := chaos.StoreDown(faults, at(c.from), at(c.to)); got != c.want {
			t.Errorf("StoreDown(%ds, %ds) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
