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

// An Extend to a shorter LockAtMostFor whose answer is lost may have set the
// shorter time to live. Once it has run out and another pod holds the lock,
// the first holder's CheckHeld must not say it still holds it.
func TestAttackExtendShorterAnswerLostCheckHeld(t *testing.T) {
	env := newEnv(t)
	f := new(shedlocktest.Faults)
	c := newClient(t)
	c.AddHook(faultHook{f})
	a := newProvider(t, c, shedlockredis.WithEnv(env))
	b := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
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
	if err := l.(shedlock.HoldChecker).CheckHeld(); err == nil {
		t.Fatal("CheckHeld: nil (held) after the time to live the lost Extend set ran out and another pod took the lock")
	}
}
