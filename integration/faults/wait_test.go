package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// Every wait inside the provider ends when its context does: a TryLock with a
// 300 ms deadline returns about then, even while another call on the same
// provider is stuck on a slow network in the first-use setup, and an Unlock
// waiting behind a stuck Extend of the same lock gives up with its context.
func TestWaitsEndWithTheirContext(t *testing.T) {
	r := newRig(t)
	p := r.pod()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

	p.proxy.SetLatency(2 * time.Second) // each request: 2 s; the first use sends several
	stuck := make(chan error, 1)
	go func() {
		_, err := p.provider.TryLock(context.Background(), cfg)
		stuck <- err
	}()
	// The first call holds the setup until the network answers.
	waitForRequest(t, p, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.provider.TryLock(ctx, shedlock.LockConfig{Name: "other", LockAtMostFor: time.Minute})
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 1500*time.Millisecond {
		t.Fatalf("TryLock with a 300ms deadline behind a stuck setup: took %v, err %v; want DeadlineExceeded at about 300ms", took, err)
	}
	p.proxy.SetLatency(0)
	if err := <-stuck; err != nil {
		t.Fatalf("the slow first call should still succeed: %v", err)
	}

	// The same for two calls on one lock: an Extend stuck on the network, and an
	// Unlock with a deadline behind it.
	l := lockHeld(t, p.provider, shedlock.LockConfig{Name: "slow", LockAtMostFor: time.Minute})
	p.proxy.SetLatency(2 * time.Second)
	sent := p.proxy.Stats().Requests
	extended := make(chan error, 1)
	go func() { extended <- l.Extend(context.Background(), time.Minute, 0) }()
	waitForRequest(t, p, sent) // the Extend is on the network, holding the lock's turn
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	start = time.Now()
	err = l.Unlock(ctx2)
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 1500*time.Millisecond {
		t.Fatalf("Unlock with a 300ms deadline behind a stuck Extend: took %v, err %v", took, err)
	}
	p.proxy.SetLatency(0)
	if err := <-extended; err != nil {
		t.Fatalf("the slow Extend should still succeed: %v", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock after the Extend: %v", err)
	}
}

func lockHeld(t *testing.T, p shedlock.LockProvider, cfg shedlock.LockConfig) shedlock.Lock {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	if err != nil {
		t.Fatalf("TryLock(%q): %v", cfg.Name, err)
	}
	return l
}

// waitForRequest polls until the pod's proxy has read more than after requests.
func waitForRequest(t *testing.T, p *pod, after int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.proxy.Stats().Requests <= after {
		if time.Now().After(deadline) {
			t.Fatal("no request reached the proxy within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
