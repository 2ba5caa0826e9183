package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// An Extend to a shorter LockAtMostFor whose answer is lost may have moved the
// key to the shorter lease. Once that lease has run out and another pod holds
// the lock, the first holder's CheckHeld (and so AssertLocked) must not say
// it still holds the lock: its doc counts from the last lease asked for.
func TestExtendShorterAnswerLostCheckHeld(t *testing.T) {
	newFaulty := faultyStore(t)
	f := new(shedlocktest.Faults)
	a := newFaulty(t, f)
	b := newFaulty(t, new(shedlocktest.Faults))
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l := mustLock(t, a, cfg)
	f.Arm(shedlocktest.AnswerLost)
	if err := l.Extend(ctx, 2*time.Second, 0); !errors.Is(err, shedlocktest.ErrAnswerLost) {
		t.Fatalf("Extend under AnswerLost: %v", err)
	}
	other, took := lockWithin(t, b, cfg, 20*time.Second)
	defer other.Unlock(ctx)
	t.Logf("another pod took the lock at %s", took.Format("05.000"))
	hc, ok := l.(shedlock.HoldChecker)
	if !ok {
		t.Fatal("the etcd lock has no CheckHeld")
	}
	if err := hc.CheckHeld(); err == nil {
		t.Fatal("CheckHeld: nil (held) after the lease the lost Extend moved the key to ran out and another pod took the lock")
	}
}
