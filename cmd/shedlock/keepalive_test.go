package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// unlock of a lock whose job is running under an executor with keep-alive: the
// keep-alive's next extension is refused, and the job's context ends with
// ErrLockLost, well before the lock's own LockAtMostFor would have.
func TestUnlockEndsKeepAliveTask(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		ex := shedlock.NewExecutor(tbl.pod(t), shedlock.WithKeepAlive())
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		cfg := shedlock.LockConfig{Name: "longJob", LockAtMostFor: 2 * time.Second}
		started, ended := make(chan struct{}), make(chan error, 1)
		go func() {
			_, _ = ex.Run(context.Background(), cfg, func(ctx context.Context) error {
				close(started)
				<-ctx.Done()
				ended <- context.Cause(ctx)
				return nil
			})
		}()
		<-started
		select {
		case err := <-ended:
			t.Fatalf("the job ended before the unlock: %v", err)
		case <-time.After(cfg.LockAtMostFor + 500*time.Millisecond): // keep-alive holds it past its LockAtMostFor
		}
		unlocked := time.Now()
		r := runCLI(t, "", tbl.args("unlock", "-force", cfg.Name)...)
		require.Equal(t, 0, r.code, r.stderr)
		select {
		case err := <-ended:
			require.ErrorIs(t, err, shedlock.ErrLockLost)
			assert.Less(t, time.Since(unlocked), cfg.LockAtMostFor, "ended at the next extension")
		case <-time.After(3 * cfg.LockAtMostFor):
			t.Fatal("the job's context did not end after the unlock")
		}
	})
}
