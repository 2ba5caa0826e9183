package shedlockredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// faultyPod returns a provider on env whose writes go through f, with its
// scripts loaded before a fault is armed, and a second, plain provider on env.
func faultyPod(t *testing.T, f *shedlocktest.Faults) (a, b *shedlockredis.Provider) {
	t.Helper()
	env := newEnv(t)
	c := newClient(t)
	c.AddHook(faultHook{f})
	a = newProvider(t, c, shedlockredis.WithEnv(env))
	b = newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	ctx := context.Background()
	w, err := a.TryLock(ctx, shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// An Extend that shortens LockAtMostFor, sent twice (as go-redis does when a
// connection drops after the server ran the script), answers with the time
// to live the first send set, far below the one before. Counting the
// difference as time held would let Unlock free the lock at once: it must
// still keep it until LockAtLeastFor after it was taken.
func TestExtendShorterSentTwiceKeepsLockAtLeastFor(t *testing.T) {
	f := new(shedlocktest.Faults)
	a, b := faultyPod(t, f)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 20 * time.Second}
	start := time.Now()
	l, err := a.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Arm(shedlocktest.Replayed)
	if err := l.Extend(ctx, 20*time.Second, 20*time.Second); err != nil {
		t.Fatalf("Extend sent twice: %v", err)
	}
	if f.Fired() != 1 {
		t.Fatal("the fault struck no write")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if got, err := b.TryLock(ctx, cfg); err == nil {
		defer got.Unlock(ctx)
		t.Fatalf("another provider took the lock %v after it was taken with LockAtLeastFor %v",
			time.Since(start).Round(time.Millisecond), cfg.LockAtLeastFor)
	}
}

// An Extend to a shorter LockAtMostFor whose answer is lost may have set the
// shorter time to live. Once it has run out and another pod holds the lock,
// the first holder's CheckHeld must not say it still holds it.
func TestCheckHeldAfterShorterExtendAnswerLost(t *testing.T) {
	f := new(shedlocktest.Faults)
	a, b := faultyPod(t, f)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := a.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Arm(shedlocktest.AnswerLost)
	if err := l.Extend(ctx, 300*time.Millisecond, 0); !errors.Is(err, shedlocktest.ErrAnswerLost) {
		t.Fatalf("Extend under AnswerLost: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		other, err := b.TryLock(ctx, cfg)
		if err == nil {
			defer other.Unlock(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another pod could not take the lock: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if err := l.(shedlock.HoldChecker).CheckHeld(); !errors.Is(err, shedlock.ErrLockExpired) {
		t.Fatalf("CheckHeld: %v after the time to live the lost Extend set ran out and another pod took the lock; want ErrLockExpired", err)
	}
}

// A lost Extend to a longer LockAtMostFor leaves CheckHeld on the earlier
// end, while the next Extend and Unlock still find the key it extended.
func TestLongerExtendAnswerLostKeepsTheKey(t *testing.T) {
	f := new(shedlocktest.Faults)
	a, b := faultyPod(t, f)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 300 * time.Millisecond}
	l, err := a.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Arm(shedlocktest.AnswerLost)
	if err := l.Extend(ctx, time.Minute, 0); !errors.Is(err, shedlocktest.ErrAnswerLost) {
		t.Fatalf("Extend under AnswerLost: %v", err)
	}
	hc := l.(shedlock.HoldChecker)
	deadline := time.Now().Add(10 * time.Second)
	for hc.CheckHeld() == nil {
		if time.Now().After(deadline) {
			t.Fatal("CheckHeld still nil 10s after a LockAtMostFor of 300ms")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if _, err := b.TryLock(ctx, cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("another pod's TryLock while the lost Extend holds the key: %v", err)
	}
	if err := l.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatalf("the next Extend: %v", err)
	}
	if err := hc.CheckHeld(); err != nil {
		t.Fatalf("CheckHeld after the next Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// A release sent twice finds its own work done: Unlock reports nil, whether
// it deleted the key or kept it for LockAtLeastFor.
func TestUnlockSentTwiceReportsReleased(t *testing.T) {
	for _, least := range []time.Duration{0, time.Millisecond, time.Minute} {
		t.Run(least.String(), func(t *testing.T) {
			f := new(shedlocktest.Faults)
			a, _ := faultyPod(t, f)
			ctx := context.Background()
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: least}
			l, err := a.TryLock(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			f.Arm(shedlocktest.Replayed)
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock sent twice: %v", err)
			}
			if f.Fired() != 1 {
				t.Fatal("the fault struck no write")
			}
		})
	}
}

// An Unlock whose answer was lost released the lock; another pod takes it;
// the holder's Unlock again finds its release done (nil) and leaves the other
// pod's lock alone. A lock taken over before the release ran is still lost
// (TestOldHandleCannotTouchNewerAcquisition).
func TestUnlockRetriedAfterAnotherTookTheLock(t *testing.T) {
	f := new(shedlocktest.Faults)
	a, b := faultyPod(t, f)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := a.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Arm(shedlocktest.AnswerLost)
	if err := l.Unlock(ctx); !errors.Is(err, shedlock.ErrReleaseFailed) {
		t.Fatalf("Unlock whose answer was lost: %v; want ErrReleaseFailed", err)
	}
	other, err := b.TryLock(ctx, cfg)
	if err != nil {
		t.Fatalf("another pod, after the release ran: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock again: %v; want nil, the first one released the lock", err)
	}
	if _, err := b.TryLock(ctx, cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("the other pod's lock after the first holder's Unlock again: %v; want it held", err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatalf("the other pod's Unlock: %v", err)
	}
}
