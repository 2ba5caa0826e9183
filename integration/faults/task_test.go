package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// Connections reset, or the database unreachable, while the task runs: the task
// goes on (it holds the lock in the table, not on a connection), and the release
// after it goes through a new connection.
func TestResetDuringTask(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(p *pod)
	}{
		{"ConnectionsReset", func(p *pod) {
			if p.proxy.ResetAll() == 0 {
				t.Error("no connection to reset during the task")
			}
		}},
		{"UnreachableForAWhile", func(p *pod) {
			p.proxy.SetDown(true)
			time.Sleep(500 * time.Millisecond) // the outage, not synchronisation
			p.proxy.SetDown(false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a, b := r.pod(), r.pod()
			ex := r.executor(a)
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
			g := r.guard(cfg.Name, a.provider.LockedBy())
			ran, err := ex.Run(context.Background(), cfg, g.task(func(context.Context) { tc.fault(a) }))
			if !ran || err != nil {
				t.Fatalf("run with a fault during the task: want (true, nil), got ran=%v err=%v", ran, err)
			}
			// Released, not left to expire: another pod takes it at once.
			l, err := b.provider.TryLock(context.Background(), cfg)
			if err != nil {
				t.Fatalf("after the run: want the lock released, got %v", err)
			}
			_ = l.Unlock(context.Background())
			g.verify(t)
		})
	}
}
