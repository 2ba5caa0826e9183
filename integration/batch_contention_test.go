package integration_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// Providers, each with its own pool, and two goroutines on each, batch
// overlapping sets of names in random orders for a few seconds: no name ever
// has two holders at once (a counter per name, raised while held), no batch
// fails (a deadlock would surface as an error), and every name is taken.
func TestBatchContention(t *testing.T) {
	t.Parallel()
	sqliteParams := strings.Replace(shedlock.SQLiteDSNParams, "busy_timeout(5000)", "busy_timeout(60000)", 1)
	stores := map[string]func(t *testing.T) func(t *testing.T) shedlock.LockProvider{
		"MySQL": func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
			table := testdb.NewFencedTable(t, testdb.Open(t, nil))
			return func(t *testing.T) shedlock.LockProvider {
				return newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			}
		},
		"PostgreSQL": func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
			table := testdb.NewFencedPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
			n := 0
			return func(t *testing.T) shedlock.LockProvider {
				n++
				return newPostgresProvider(t, pgClients[n%len(pgClients)].open(t, nil), shedlock.WithTableName(table))
			}
		},
		"SQLite": func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
			newProvider := sqliteStoreWith(sqliteParams)(t)
			return func(t *testing.T) shedlock.LockProvider { return newProvider(t) }
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			newProvider := newStore(t)
			var providers []shedlock.BatchLocker
			for range 4 {
				providers = append(providers, newProvider(t).(shedlock.BatchLocker))
			}
			batchContention(t, providers, 12, 2*time.Second)
		})
	}
}

func batchContention(t *testing.T, providers []shedlock.BatchLocker, nNames int, run time.Duration) {
	ctx := context.Background()
	names := make([]string, nNames)
	holders := make([]atomic.Int32, nNames)
	taken := make([]atomic.Int64, nNames)
	for i := range names {
		names[i] = fmt.Sprintf("job-%02d", i)
	}
	var overlaps, batches atomic.Int64
	var mu sync.Mutex
	var errs []error
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range 2 * len(providers) {
		p := providers[w%len(providers)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				pick := rand.Perm(nNames)[:nNames/2] // overlapping sets, in random orders
				cfgs := make([]shedlock.LockConfig, len(pick))
				for k, i := range pick {
					cfgs[k] = shedlock.LockConfig{Name: names[i], LockAtMostFor: time.Minute}
				}
				res, err := p.TryLockBatch(ctx, cfgs)
				batches.Add(1)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				var held []int
				for k, r := range res {
					switch {
					case r.Err == nil:
						held = append(held, k)
						if holders[pick[k]].Add(1) != 1 {
							overlaps.Add(1)
						}
						taken[pick[k]].Add(1)
					case !errors.Is(r.Err, shedlock.ErrNotAcquired):
						mu.Lock()
						errs = append(errs, r.Err)
						mu.Unlock()
					}
				}
				runtime.Gosched() // hold the locks a moment, as a job would
				for _, k := range held {
					holders[pick[k]].Add(-1)
					if err := res[k].Lock.Unlock(ctx); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	require.Empty(t, errs, "batch errors")
	assert.Zero(t, overlaps.Load(), "two holders of one name at once")
	var total int64
	for i := range taken {
		assert.Positive(t, taken[i].Load(), "%s was never taken", names[i])
		total += taken[i].Load()
	}
	t.Logf("%d batches, %d acquisitions in %v", batches.Load(), total, run)
}
