package integration_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// gatedStore passes a MariaDB provider's attempts on, holding the TryLock of
// one name and the first batch until the test lets them go (or the batch's
// context ends), and counts the locks its batches take.
type gatedStore struct {
	p                 *shedlock.MySQLProvider
	hold              string
	held, letHeld     chan struct{}
	inBatch, letBatch chan struct{}
	batchOnce         sync.Once
	batchesInFlight   atomic.Int32
	takenAfterStop    atomic.Int32
	stopped           atomic.Bool
}

func (g *gatedStore) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if cfg.Name == g.hold {
		close(g.held)
		<-g.letHeld
	}
	return g.p.TryLock(ctx, cfg)
}

func (g *gatedStore) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	g.batchesInFlight.Add(1)
	defer g.batchesInFlight.Add(-1)
	g.batchOnce.Do(func() {
		close(g.inBatch)
		select {
		case <-g.letBatch:
		case <-ctx.Done(): // as a driver ends a statement whose context ends
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := g.p.TryLockBatch(ctx, cfgs)
	for _, r := range res {
		if r.Lock != nil && g.stopped.Load() {
			g.takenAfterStop.Add(1)
		}
	}
	return res, err
}

// Stop ends the executor: no run starts after it, and it waits for the runs
// under way to release their locks. A batch of attempts in flight when Stop
// is called is part of those runs: Stop must not return while it may still
// take locks, or a process that exits after Stop leaves them held, with no
// task, until their LockAtMostFor (10 minutes in the README's example). Here
// the batch's callers are Wrap jobs, which give up when Stop begins: their
// batch is cancelled, and Stop returns once it has answered.
func TestStopWaitsForBatchInFlight(t *testing.T) {
	t.Parallel()
	g := &gatedStore{p: mysqlStore(nil)(t)(t).(*shedlock.MySQLProvider), hold: "blocker",
		held: make(chan struct{}), letHeld: make(chan struct{}),
		inBatch: make(chan struct{}), letBatch: make(chan struct{})}
	attempts := make(chan string, 16)
	ex := shedlock.NewExecutor(g, shedlock.WithMaxInFlight(2), // one attempt in flight
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventAttempt {
				attempts <- ev.Config.Name
			}
		})))
	job := func(name string) cron.Job {
		j, err := ex.Wrap(shedlock.LockConfig{Name: name, LockAtMostFor: 10 * time.Minute}, cron.FuncJob(func() {}))
		require.NoError(t, err)
		return j
	}
	blocker, a, b := job("blocker"), job("a"), job("b")
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); blocker.Run() }()
	<-g.held
	go func() { defer wg.Done(); a.Run() }()
	go func() { defer wg.Done(); b.Run() }()
	for range 3 {
		<-attempts
	}
	time.Sleep(50 * time.Millisecond) // let a and b reach the queue after their EventAttempt
	close(g.letHeld)
	select {
	case <-g.inBatch:
	case <-time.After(10 * time.Second):
		t.Fatal("a and b were not sent together within 10s")
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, ex.Stop(stopCtx))
	g.stopped.Store(true)
	inFlight := g.batchesInFlight.Load()
	close(g.letBatch)
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for g.batchesInFlight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	assert.Zero(t, inFlight, "batch statements of the executor still in flight when Stop returned")
	assert.Zero(t, g.takenAfterStop.Load(), "locks the executor's batch took after Stop returned")
}
