package shedlocktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// RunControl runs the contract of shedlock.Controller and
// shedlock.RunRequester, what an operator's pause, resume and run-now need of
// a store, as parallel subtests of t: every provider newStore makes must
// implement both. Where the provider is a shedlock.BatchLocker, a
// shedlock.FireLocker or a shedlock.Admin, it checks their part too:
//
//   - a pause refuses every attempt, by every provider, with an error that
//     is shedlock.ErrPaused and shedlock.ErrNotAcquired, single, in a batch
//     and for a fire time, until Resume, or until its end passes by itself;
//     a holder goes on extending and releasing the lock it held;
//   - each RunNow is one request; RunRequests counts them for many names in
//     one call; RunDone marks one, only while the lock passed is held, and
//     one acquisition marks at most one;
//   - Locks and Inspect show a job's Control, a paused name no one holds
//     included.
func RunControl(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, newProvider NewProviderFunc)
	}{
		{"PauseRefusesEveryAttempt", testPauseRefuses},
		{"PauseRefusesBatchAndFireTime", testPauseBatchFire},
		{"PauseUntilEndsByItself", testPauseUntil},
		{"PauseWhileHeld", testPauseWhileHeld},
		{"PauseInvalid", testPauseInvalid},
		{"PauseFarFuture", testPauseFarFuture},
		{"RunNowCounts", testRunNowCounts},
		{"RunNowConcurrent", testRunNowConcurrent},
		{"RunDoneWhileHeld", testRunDone},
		{"RunDoneAfterExpiry", testRunDoneExpired},
		{"AdminShowsControl", testAdminControl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// controlled is a provider and its Controller and RunRequester.
type controlled struct {
	shedlock.LockProvider
	c shedlock.Controller
	r shedlock.RunRequester
}

func newControlled(t *testing.T, newProvider NewProviderFunc) controlled {
	t.Helper()
	p := newProvider(t)
	c, ok := p.(shedlock.Controller)
	if !ok {
		t.Fatalf("provider %T does not implement shedlock.Controller", p)
	}
	r, ok := p.(shedlock.RunRequester)
	if !ok {
		t.Fatalf("provider %T does not implement shedlock.RunRequester", p)
	}
	return controlled{p, c, r}
}

func (p controlled) pause(t *testing.T, name string, until time.Time) {
	t.Helper()
	if err := p.c.Pause(context.Background(), name, until); err != nil {
		t.Fatalf("Pause(%q, %v): %v", name, until, err)
	}
}

func (p controlled) resume(t *testing.T, name string) {
	t.Helper()
	if err := p.c.Resume(context.Background(), name); err != nil {
		t.Fatalf("Resume(%q): %v", name, err)
	}
}

// mustBePaused checks that err is a refusal for a pause: ErrPaused, which is
// ErrNotAcquired too.
func mustBePaused(t *testing.T, what string, l any, err error) {
	t.Helper()
	if !errors.Is(err, shedlock.ErrPaused) || !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("%s of a paused name: want ErrPaused (and ErrNotAcquired), got lock=%v err=%v", what, l, err)
	}
}

func mustNotLockPaused(t *testing.T, p shedlock.LockProvider, c shedlock.LockConfig) {
	t.Helper()
	l, err := p.TryLock(context.Background(), c)
	mustBePaused(t, "TryLock("+c.Name+")", l, err)
}

func testPauseRefuses(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	job := cfg("job", time.Minute, 0)
	a.resume(t, "job") // a name never paused: no error
	a.pause(t, "job", time.Time{})
	a.pause(t, "job", time.Time{}) // again: still one pause
	for range 3 {
		mustNotLockPaused(t, a, job)
		mustNotLockPaused(t, b, job)
	}
	mustLock(t, b, cfg("other", time.Minute, 0)) // other names are not paused
	if admin, ok := a.LockProvider.(shedlock.Admin); ok {
		info, err := admin.Inspect(context.Background(), "job")
		if err != nil || info.Held || !info.Paused || !info.PausedUntil.IsZero() {
			t.Fatalf("Inspect of a name paused until Resume, never held: %+v, %v; want paused, not held", info, err)
		}
	}
	b.resume(t, "job") // any provider resumes
	l := mustLock(t, b, job)
	mustNotLock(t, a, job) // held now, as any lock
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	b.resume(t, "job") // not paused: no error
	mustLock(t, a, job)
}

func testPauseBatchFire(t *testing.T, newProvider NewProviderFunc) {
	a := newControlled(t, newProvider)
	ctx := context.Background()
	a.pause(t, "job", time.Now().Add(time.Hour))
	if ba, ok := a.LockProvider.(shedlock.BatchLocker); ok {
		res, err := ba.TryLockBatch(ctx, []shedlock.LockConfig{cfg("free", time.Minute, 0), cfg("job", time.Minute, 0)})
		if err != nil || len(res) != 2 {
			t.Fatalf("TryLockBatch: %d results, %v", len(res), err)
		}
		if res[0].Err != nil || res[0].Lock == nil {
			t.Fatalf("batch entry of a free name beside a paused one: lock=%v err=%v", res[0].Lock, res[0].Err)
		}
		mustBePaused(t, "TryLockBatch", res[1].Lock, res[1].Err)
	} else {
		t.Logf("%T is not a shedlock.BatchLocker", a.LockProvider)
	}
	if fl, ok := a.LockProvider.(shedlock.FireLocker); ok {
		l, err := fl.TryLockFire(ctx, cfg("job", time.Minute, 0), fireBase())
		mustBePaused(t, "TryLockFire", l, err)
		if _, ok, err := fl.LastFire(ctx, "job"); err != nil || ok {
			t.Fatalf("LastFire after a refused fire time: ok %v, err %v; want none", ok, err)
		}
	} else {
		t.Logf("%T is not a shedlock.FireLocker", a.LockProvider)
	}
	a.resume(t, "job")
	mustLock(t, a, cfg("job", time.Minute, 0))
}

// testPauseUntil: a pause until a time refuses attempts until then, and ends
// by itself, with no Resume. A store may end it late (a lease of whole
// seconds), never early.
func testPauseUntil(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	widening(t, time.Second, func(name string, window time.Duration) bool {
		until := time.Now().Add(window)
		a.pause(t, name, until)
		if tryLock(t, b, cfg(name, time.Minute, 0)) {
			if time.Now().Before(until) {
				t.Fatalf("a name paused until %v was taken before then", until)
			}
			return false // answered after the pause ended: tells nothing
		}
		for {
			l, err := b.TryLock(context.Background(), cfg(name, time.Minute, 0))
			returned := time.Now()
			if err == nil {
				if returned.Before(until.Add(-slack)) {
					t.Fatalf("a name paused until %v was taken %v before then", until, until.Sub(returned))
				}
				_ = l.Unlock(context.Background())
				break
			}
			if !errors.Is(err, shedlock.ErrNotAcquired) {
				t.Fatalf("TryLock while paused until %v: %v", until, err)
			}
			if returned.After(until.Add(15 * time.Second)) {
				t.Fatalf("a pause until %v still refused the lock %v later: it did not end by itself", until, returned.Sub(until))
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
		if admin, ok := a.LockProvider.(shedlock.Admin); ok {
			info, err := admin.Inspect(context.Background(), name)
			if err != nil && !errors.Is(err, shedlock.ErrLockNotFound) || err == nil && info.Paused {
				t.Fatalf("Inspect after the pause ended: %+v, %v; want not paused (or ErrLockNotFound where nothing is kept)", info, err)
			}
		}
		return true
	})
}

func testPauseWhileHeld(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	ctx := context.Background()
	job := cfg("job", time.Minute, 0)
	l := mustLock(t, a, job)
	b.pause(t, "job", time.Time{})
	if err := l.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatalf("Extend of a lock held when its job was paused: %v", err)
	}
	mustNotLock(t, b, job)
	mustNotLock(t, a, job)
	if admin, ok := b.LockProvider.(shedlock.Admin); ok {
		info, err := admin.Inspect(ctx, "job")
		if err != nil || !info.Held || !info.Paused {
			t.Fatalf("Inspect of a held, paused name: %+v, %v; want held and paused", info, err)
		}
	}
	if hc, ok := l.(shedlock.HoldChecker); ok {
		if err := hc.CheckHeld(); err != nil {
			t.Fatalf("CheckHeld of a lock held when its job was paused: %v", err)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of a lock held when its job was paused: %v", err)
	}
	mustNotLockPaused(t, b, job)
	mustNotLockPaused(t, a, job)
	a.resume(t, "job")
	mustLock(t, b, job)
}

func testPauseInvalid(t *testing.T, newProvider NewProviderFunc) {
	a := newControlled(t, newProvider)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		until time.Time
	}{
		{"", time.Time{}},
		{strings.Repeat("x", shedlock.MaxNameLength+1), time.Time{}},
		{"job", time.Now().Add(-time.Second)}, // a pause that has already ended
	} {
		if err := a.c.Pause(ctx, tc.name, tc.until); !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("Pause(%q, %v): want ErrInvalidConfig, got %v", tc.name, tc.until, err)
		}
	}
	if _, err := a.c.RunNow(ctx, ""); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("RunNow(\"\"): want ErrInvalidConfig, got %v", err)
	}
	mustLock(t, a, cfg("job", time.Minute, 0)) // nothing was paused
}
