package integration_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// RunDone whose write the store applies but whose answer is lost, late, or
// which is sent twice: one acquisition marks one request, never two, and a
// retry of a lost answer marks none more.
func TestControlRunDoneUnknownOutcomes(t *testing.T) {
	t.Parallel()
	type opened struct {
		ctl   shedlock.Controller
		exec  func(f *shedlocktest.Faults) shedlock.LockProvider
		where string
	}
	stores := map[string]func(t *testing.T) opened{
		"MySQL": func(t *testing.T) opened {
			table := testdb.NewControlTable(t, testdb.Open(t, nil))
			return opened{
				ctl: newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)),
				exec: func(f *shedlocktest.Faults) shedlock.LockProvider {
					return newMySQLProvider(t, faultyDB(t, f, "mysql", testdb.MySQLDSN(t)), shedlock.WithTableName(table))
				},
			}
		},
		"PostgreSQL": func(t *testing.T) opened {
			table := testdb.NewControlPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
			return opened{
				ctl: newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table)),
				exec: func(f *shedlocktest.Faults) shedlock.LockProvider {
					return newPostgresProvider(t, faultyDB(t, f, pgxClient.driver, testdb.PostgresURL(t, pgxClient.params)),
						shedlock.WithTableName(table))
				},
			}
		},
	}
	for name, open := range stores {
		for _, fault := range []shedlocktest.Fault{shedlocktest.AnswerLost, shedlocktest.AnswerLate, shedlocktest.Replayed} {
			t.Run(name+"/"+fault.String(), func(t *testing.T) {
				t.Parallel()
				o := open(t)
				ctx := context.Background()
				for range 3 {
					if _, err := o.ctl.RunNow(ctx, "job"); err != nil {
						t.Fatal(err)
					}
				}
				f := &shedlocktest.Faults{}
				p := o.exec(f)
				l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				f.Arm(fault)
				dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err = p.(shedlock.RunRequester).RunDone(dctx, "job", l)
				cancel()
				if f.Fired() != 1 {
					t.Fatalf("the fault struck no write (RunDone: %v)", err)
				}
				if fault == shedlocktest.Replayed && err != nil {
					t.Fatalf("replayed RunDone: %v", err)
				}
				if fault != shedlocktest.Replayed && err == nil {
					t.Fatalf("RunDone whose answer was lost returned nil")
				}
				// The executor's retry, or a RunDone sent again.
				if err := p.(shedlock.RunRequester).RunDone(ctx, "job", l); err != nil && !errors.Is(err, shedlock.ErrLockLost) {
					t.Fatalf("RunDone again: %v", err)
				}
				left, err := o.ctl.(shedlock.RunRequester).RunRequests(ctx, []string{"job"})
				if err != nil {
					t.Fatal(err)
				}
				if left["job"] != 2 {
					t.Fatalf("3 requests, one acquisition's RunDone (%v, then again): %d pending, want 2", fault, left["job"])
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
