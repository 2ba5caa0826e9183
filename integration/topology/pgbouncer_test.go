package topology_test

// Issue 16, item 1: PgBouncer in transaction pooling (Debian's 1.18, no
// prepared-statement support in that mode). Each transaction may run on any
// server connection of the pool, so a statement prepared on one server
// connection and executed later is executed wherever that transaction lands:
// lib/pq's statements "1", "2", … of another client (another table's), pgx's
// describe_exec unnamed statement of another client, pgx's cached statements
// missing (26000) or already there (42P05).
//
// What must hold, whatever the driver and its mode: a lock TryLock grants is a
// row of this provider's table, for this name, held by this provider, that no
// one else holds at the same time; and TryLock answers ErrNotAcquired or a
// granted lock, or, on first use, ErrUnsafeStore naming what works
// (pgx's default_query_exec_mode=simple_protocol, exec or cache_describe), never
// a stream of store errors. The modes that carry nothing across round trips
// (pgx simple_protocol, exec, cache_describe) must just work.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// pgMode is a driver and its mode, as a service behind a pooler would set it.
type pgMode struct {
	name   string
	driver string
	params map[string]string
	safe   bool // carries nothing across round trips: must work behind transaction pooling
}

func pgxMode(name, mode string, safe bool) pgMode {
	var params map[string]string
	if mode != "" {
		params = map[string]string{"default_query_exec_mode": mode}
	}
	return pgMode{name: name, driver: testdb.PGX, params: params, safe: safe}
}

var pgModes = []pgMode{
	{name: "LibPQ", driver: testdb.LibPQ},
	pgxMode("PGXCacheStatement", "", false), // pgx's default
	pgxMode("PGXDescribeExec", "describe_exec", false),
	pgxMode("PGXSimpleProtocol", "simple_protocol", true),
	pgxMode("PGXExec", "exec", true),
	pgxMode("PGXCacheDescribe", "cache_describe", true),
}

// Each mode's pods contend for pgbouncerRun and until they have had
// pgbouncerGrants locks, for at most pgbouncerMax: a slow machine runs longer
// rather than judge a mode on too few locks. The tests' subtests run GOMAXPROCS
// at a time: 8 of them take about 4 times pgbouncerRun on 2 cores.
const (
	pgbouncerRun    = 3 * time.Second
	pgbouncerGrants = 50
	pgbouncerMax    = 20 * time.Second
)

func TestPgBouncerTransactionPooling(t *testing.T) {
	t.Parallel()
	for _, m := range pgModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			// Two server connections for 4 pods of up to 3 client connections each.
			b := testdb.PgBouncer(t, privatedb.PoolTransaction, 2)
			r := contendThroughPooler(t, b, m)
			r.requireExclusive(t)
			// Refused on first use is the other right answer, for the unsafe modes.
			if r.refused == 0 || m.safe {
				r.requireWorked(t, m)
			}
		})
	}
}

// Session pooling keeps one server connection per client connection, as no
// pooler would: every driver mode works there. This is the contrast.
func TestPgBouncerSessionPooling(t *testing.T) {
	t.Parallel()
	for _, m := range []pgMode{pgModes[0], pgModes[1]} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			// Enough server connections for every client connection: in session
			// mode an idle client connection keeps its server connection.
			b := testdb.PgBouncer(t, privatedb.PoolSession, 16)
			r := contendThroughPooler(t, b, m)
			r.requireExclusive(t)
			r.requireWorked(t, m)
		})
	}
}

// poolerRun is what the pods of one mode did.
type poolerRun struct {
	granted  int // TryLock returned a lock
	took     time.Duration
	phantoms []string
	overlaps int
	refused  int // ErrUnsafeStore
	refusals []string
	errs     *errorTally
}

func (r *poolerRun) requireExclusive(t *testing.T) {
	t.Helper()
	assert.Empty(t, r.phantoms, "granted locks that are not this provider's row of its table "+
		"(%d of %d granted)", len(r.phantoms), r.granted)
	assert.Zero(t, r.overlaps, "two pods held one lock at once")
	assert.Empty(t, r.errs.n, "TryLock or Unlock errors other than ErrNotAcquired and ErrUnsafeStore:%s", r.errs)
}

func (r *poolerRun) requireWorked(t *testing.T, m pgMode) {
	t.Helper()
	assert.Zero(t, r.refused, "ErrUnsafeStore for a mode that works behind transaction pooling: %q", r.refusals)
	assert.GreaterOrEqual(t, r.granted, pgbouncerGrants, "acquisitions in %v", r.took)
	t.Logf("%s: %d acquisitions in %v, 0 overlaps", m.name, r.granted, r.took)
}

// contendThroughPooler runs two pods on each of two tables, every pod with a
// pool of its own through b, taking and releasing two locks as fast as they
// can for pgbouncerRun (longer on a slow machine: see pgbouncerGrants). Each granted lock is checked on a direct connection
// while it is held: it must be a row of the pod's table, for that name,
// locked by that pod and not yet expired.
func contendThroughPooler(t *testing.T, b *privatedb.PgBouncer, m pgMode) *poolerRun {
	t.Helper()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil) // direct, not through the pooler
	tables := []string{testdb.NewPostgresTable(t, admin), testdb.NewPostgresTable(t, admin)}
	type pod struct {
		p     *shedlock.PostgresProvider
		table string
	}
	var pods []pod
	for i := range 4 {
		db, err := sql.Open(m.driver, b.URL(m.params))
		require.NoError(t, err)
		db.SetMaxOpenConns(3)
		t.Cleanup(func() { _ = db.Close() })
		table := tables[i%2]
		p, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName(table),
			shedlock.WithLockedBy(fmt.Sprintf("pod%d-%s", i, table)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pods = append(pods, pod{p: p, table: table})
	}

	r := &poolerRun{errs: newErrorTally()}
	var mu sync.Mutex // guards r's counters
	ex := newExclusion()
	ctx, cancel := context.WithTimeout(context.Background(), pgbouncerMax)
	defer cancel()
	begin := time.Now()
	enough := func() { // with mu held
		if r.granted >= pgbouncerGrants && time.Since(begin) >= pgbouncerRun {
			cancel()
		}
	}
	time.AfterFunc(pgbouncerRun, func() {
		mu.Lock()
		defer mu.Unlock()
		enough()
	})
	var wg sync.WaitGroup
	for _, pd := range pods {
		for w := range 2 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					cfg := shedlock.LockConfig{Name: fmt.Sprintf("job-%d", (i+w)%2), LockAtMostFor: 30 * time.Second}
					l, err := pd.p.TryLock(ctx, cfg)
					switch {
					case errors.Is(err, shedlock.ErrNotAcquired):
						continue
					case errors.Is(err, shedlock.ErrUnsafeStore):
						mu.Lock()
						r.refused++
						if len(r.refusals) < 3 {
							r.refusals = append(r.refusals, err.Error())
						}
						mu.Unlock()
						return
					case err != nil:
						if ctx.Err() == nil {
							r.errs.add("TryLock", err)
						}
						continue
					}
					key := pd.table + "/" + cfg.Name
					ex.enter(key)
					phantom := checkHeld(admin, pd.table, cfg.Name, pd.p.LockedBy())
					ex.leave(key)
					err = l.Unlock(context.Background())
					mu.Lock()
					r.granted++
					enough()
					if phantom != "" && len(r.phantoms) < 1000 {
						r.phantoms = append(r.phantoms, phantom)
					}
					mu.Unlock()
					if err != nil {
						r.errs.add("Unlock", err)
					}
				}
			})
		}
	}
	wg.Wait()
	r.took = time.Since(begin).Round(time.Millisecond)
	_, r.overlaps = ex.counts()
	for _, s := range r.refusals {
		assert.Contains(t, s, "simple_protocol", "ErrUnsafeStore must name what works")
	}
	if len(r.phantoms) > 0 {
		t.Logf("first phantom locks: %q", r.phantoms[:min(3, len(r.phantoms))])
	}
	// Rows written to the other table by a cross-wired statement.
	for i, table := range tables {
		var foreign int
		require.NoError(t, admin.QueryRow(`SELECT count(*) FROM "`+table+`" WHERE locked_by NOT LIKE '%'||$1||'%'`,
			table).Scan(&foreign))
		assert.Zero(t, foreign, "rows of table %d written by the other table's pods", i)
	}
	t.Logf("%s: granted %d, phantoms %d, overlaps %d, refused %d, errors:%s",
		m.name, r.granted, len(r.phantoms), r.overlaps, r.refused, r.errs)
	return r
}

// checkHeld returns "" when table has name's row locked by owner (locked_by
// starts with owner) until a time still to come, else what it found.
func checkHeld(admin *sql.DB, table, name, owner string) string {
	var lockedBy string
	var live bool
	err := admin.QueryRow(`SELECT locked_by, lock_until > (statement_timestamp() AT TIME ZONE 'UTC') FROM "`+table+
		`" WHERE name = $1`, name).Scan(&lockedBy, &live)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Sprintf("%s: no row %q", table, name)
	case err != nil:
		return fmt.Sprintf("%s: read row %q: %v", table, name, err)
	case !strings.HasPrefix(lockedBy, owner):
		return fmt.Sprintf("%s: row %q locked by %q, not %q", table, name, lockedBy, owner)
	case !live:
		return fmt.Sprintf("%s: row %q locked by %q has expired", table, name, lockedBy)
	}
	return ""
}
