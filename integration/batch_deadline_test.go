package integration_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// slowBatchStore passes a MariaDB provider's attempts on; the TryLock of one
// name waits until the test lets it go, and the first batch answers only when
// the test lets it (or its context ends), as a store that is slow at a tick.
type slowBatchStore struct {
	p                 *shedlock.MySQLProvider
	hold              string
	held, letHeld     chan struct{}
	inBatch, letBatch chan struct{}
	once              sync.Once
	first             []string // the names of the first batch
}

func (s *slowBatchStore) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	if cfg.Name == s.hold {
		close(s.held)
		<-s.letHeld
	}
	return s.p.TryLock(ctx, cfg)
}

func (s *slowBatchStore) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	first := false
	s.once.Do(func() {
		first = true
		for _, c := range cfgs {
			s.first = append(s.first, c.Name)
		}
		close(s.inBatch)
	})
	if first {
		select {
		case <-s.letBatch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.p.TryLockBatch(ctx, cfgs)
}

// Each attempt has its own bound (WithAcquireTimeout: "bounds how long taking
// a lock before a run may take"), also while it rides a batch: an attempt
// whose bound has passed gives up, and one whose bound has not is not failed
// by another's. Here an old attempt (x, 2s bound nearly used up waiting for a
// slot) and a new one (y, 2s bound fresh) go in one batch, and the store
// answers after x's bound and well within y's.
func TestBatchMembersKeepOwnAcquireTimeout(t *testing.T) {
	t.Parallel()
	// The two must reach the queue while the slot is taken: on a busy machine
	// y may come too late, and the scenario is played again.
	for try := range 5 {
		if batchMembersKeepOwnAcquireTimeout(t) {
			return
		}
		t.Logf("try %d: x and y did not go in one batch; again", try)
	}
	t.Fatal("x and y never went in one batch in 5 tries")
}

// batchMembersKeepOwnAcquireTimeout plays the scenario once; false when x
// and y did not go in one batch, and nothing was checked.
func batchMembersKeepOwnAcquireTimeout(t *testing.T) bool {
	s := &slowBatchStore{p: mysqlStore(nil)(t)(t).(*shedlock.MySQLProvider), hold: "blocker",
		held: make(chan struct{}), letHeld: make(chan struct{}),
		inBatch: make(chan struct{}), letBatch: make(chan struct{})}
	attempts := make(chan string, 16)
	const bound = 2 * time.Second
	ex := shedlock.NewExecutor(s, shedlock.WithMaxInFlight(2), shedlock.WithAcquireTimeout(bound),
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventAttempt {
				attempts <- ev.Config.Name
			}
		})))
	defer ex.Stop(context.Background())
	noop := func(context.Context) error { return nil }
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	}
	type outcome struct {
		ran bool
		err error
		at  time.Time
	}
	go func() { _, _ = ex.Run(context.Background(), cfg("blocker"), noop) }()
	<-s.held
	x, y := make(chan outcome, 1), make(chan outcome, 1)
	start := time.Now()
	go func() { ran, err := ex.Run(context.Background(), cfg("x"), noop); x <- outcome{ran, err, time.Now()} }()
	<-attempts
	<-attempts
	time.Sleep(bound * 6 / 10) // x has waited most of its bound for a slot
	go func() { ran, err := ex.Run(context.Background(), cfg("y"), noop); y <- outcome{ran, err, time.Now()} }()
	<-attempts
	time.Sleep(50 * time.Millisecond) // let y reach the queue after its EventAttempt
	close(s.letHeld)
	select {
	case <-s.inBatch:
	case <-time.After(10 * time.Second):
	}
	if len(s.first) != 2 {
		close(s.letBatch)
		<-x
		<-y
		return false
	}
	time.Sleep(time.Until(start.Add(bound + 300*time.Millisecond))) // the store answers past x's bound
	close(s.letBatch)
	ox, oy := <-x, <-y
	t.Logf("x: ran %v, %v, after %v; y: ran %v, %v, after %v", ox.ran, ox.err, ox.at.Sub(start).Round(time.Millisecond),
		oy.ran, oy.err, oy.at.Sub(start).Round(time.Millisecond))
	assert.Less(t, ox.at.Sub(start), bound+200*time.Millisecond, "x's attempt outlived its own bound riding the batch")
	require.NoError(t, oy.err, "y failed within its own bound")
	assert.True(t, oy.ran, "y")
	return true
}
