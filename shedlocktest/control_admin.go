package shedlocktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// testAdminControl: Locks and Inspect show each job's Control, a name that
// is paused or has run requests and that no one holds included.
func testAdminControl(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	admin, ok := a.LockProvider.(shedlock.Admin)
	if !ok {
		t.Logf("%T is not a shedlock.Admin: nothing shows Control", a.LockProvider)
		return
	}
	ctx := context.Background()
	until := time.Now().Add(time.Hour)
	a.pause(t, "paused-until", until)
	a.pause(t, "paused", time.Time{})
	mustLock(t, b, cfg("held-paused", time.Minute, 0))
	a.pause(t, "held-paused", time.Time{})
	a.runNow(t, "requested")
	a.runNow(t, "requested")
	mustLock(t, b, cfg("plain", time.Minute, 0))

	checkListed(t, admin, controlsShown(until))

	a.resume(t, "paused")
	info, err := admin.Inspect(ctx, "paused")
	if err != nil && !errors.Is(err, shedlock.ErrLockNotFound) || err == nil && info.Control != (shedlock.Control{}) {
		t.Fatalf("Inspect after Resume: %+v, %v; want no Control, or ErrLockNotFound where nothing is kept", info, err)
	}
	if _, err := admin.ForceUnlock(ctx, "held-paused"); err != nil {
		t.Fatalf("ForceUnlock of a paused name: %v", err)
	}
	if info, err := admin.Inspect(ctx, "held-paused"); err != nil || info.Held || !info.Paused {
		t.Fatalf("Inspect after ForceUnlock of a paused name: %+v, %v; want paused, not held", info, err)
	}
	mustNotLockPaused(t, b, cfg("held-paused", time.Minute, 0))
}

// controlsShown is what Locks and Inspect must show of each name
// testAdminControl steered: until is "paused-until"'s end.
func controlsShown(until time.Time) map[string]func(shedlock.LockInfo) bool {
	return map[string]func(shedlock.LockInfo) bool{
		"held-paused": func(i shedlock.LockInfo) bool {
			return i.Held && i.Paused && i.PausedUntil.IsZero() && i.RunRequests == 0
		},
		"paused": func(i shedlock.LockInfo) bool {
			return !i.Held && i.Paused && i.PausedUntil.IsZero() && i.RunRequests == 0
		},
		"paused-until": func(i shedlock.LockInfo) bool {
			d := i.PausedUntil.Sub(until)
			return !i.Held && i.Paused && d > -time.Millisecond && d <= time.Millisecond && i.RunRequests == 0
		},
		"plain": func(i shedlock.LockInfo) bool {
			return i.Held && i.Control == shedlock.Control{}
		},
		"requested": func(i shedlock.LockInfo) bool {
			return !i.Held && !i.Paused && i.RunRequests == 2
		},
	}
}

// checkListed fails t unless Locks lists each name of want, by name, and it
// and Inspect show it as want says.
func checkListed(t *testing.T, admin shedlock.Admin, want map[string]func(shedlock.LockInfo) bool) {
	t.Helper()
	ctx := context.Background()
	locks, err := admin.Locks(ctx)
	if err != nil {
		t.Fatalf("Locks: %v", err)
	}
	seen := map[string]bool{}
	last := ""
	for _, l := range locks {
		if l.Name < last {
			t.Fatalf("Locks: %q after %q; want them by name", l.Name, last)
		}
		last = l.Name
		if ok, listed := want[l.Name]; listed {
			seen[l.Name] = true
			if !ok(l) {
				t.Errorf("Locks: %+v is not what was done to %q", l, l.Name)
			}
		}
	}
	for name, ok := range want {
		if !seen[name] {
			t.Errorf("Locks: %q is not listed (%d locks)", name, len(locks))
		}
		info, err := admin.Inspect(ctx, name)
		if err != nil || info.Name != name || !ok(info) {
			t.Errorf("Inspect(%q): %+v, %v", name, info, err)
		}
	}
}
