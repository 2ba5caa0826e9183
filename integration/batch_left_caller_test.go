package integration_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// A caller whose context ends while its attempt is in a batch returns then;
// "a lock the batch takes for it afterwards is released at once"
// (docs/stores.md, Batches). No run happened under that lock, so nothing
// should keep it for the config's LockAtLeastFor: another pod must be able
// to take it and run the job, rather than every pod skipping it for a minute.
func TestBatchLockForCallerThatLeftFreedAtOnce(t *testing.T) {
	t.Parallel()
	newProvider := mysqlStore(nil)(t)
	g := &gatedStore{p: newProvider(t).(*shedlock.MySQLProvider), hold: "blocker",
		held: make(chan struct{}), letHeld: make(chan struct{}),
		inBatch: make(chan struct{}), letBatch: make(chan struct{})}
	other := newProvider(t)
	attempts := make(chan string, 16)
	ex := shedlock.NewExecutor(g, shedlock.WithMaxInFlight(2), // one attempt in flight
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventAttempt {
				attempts <- ev.Config.Name
			}
		})))
	defer ex.Stop(context.Background())
	noop := func(context.Context) error { return nil }
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: 10 * time.Minute, LockAtLeastFor: time.Minute}
	}
	go func() { _, _ = ex.Run(context.Background(), cfg("blocker"), noop) }()
	<-g.held
	short, cancel := context.WithCancel(context.Background())
	defer cancel()
	shortDone, patientDone := make(chan error, 1), make(chan error, 1)
	go func() { _, err := ex.Run(short, cfg("short"), noop); shortDone <- err }()
	go func() { _, err := ex.Run(context.Background(), cfg("patient"), noop); patientDone <- err }()
	for range 3 {
		<-attempts
	}
	time.Sleep(50 * time.Millisecond) // let both reach the queue after their EventAttempt
	close(g.letHeld)
	select {
	case <-g.inBatch:
	case <-time.After(10 * time.Second):
		t.Fatal("short and patient were not sent together within 10s")
	}
	cancel()
	require.ErrorIs(t, <-shortDone, context.Canceled)
	close(g.letBatch)
	require.NoError(t, <-patientDone)

	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := other.TryLock(context.Background(), shedlock.LockConfig{Name: "short", LockAtMostFor: time.Minute})
		if err == nil {
			require.NoError(t, l.Unlock(context.Background()))
			return
		}
		require.True(t, errors.Is(err, shedlock.ErrNotAcquired), "%v", err)
		if time.Now().After(deadline) {
			assert.Fail(t, "the lock taken for the caller that left, which ran nothing, was still held 5s later "+
				"(its LockAtLeastFor is 1m)")
			return
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
