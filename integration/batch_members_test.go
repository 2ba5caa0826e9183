package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// collationTwins are names that MariaDB's default collation
// (utf8mb4_general_ci) keeps in one row, and that the executor's own rule
// (case, Latin accents, trailing spaces) does not take as one name.
var collationTwins = [][2]string{
	{"отчёт", "отчет"},
	{"ß-job", "s-job"},
	{"ı-job", "i-job"},
}

// Of two names of one batch that the name column's collation makes one row,
// only the later fails, with its own error naming both; the first and the
// batch's other names are taken, at every tick, not only the first.
func TestBatchCollationTwinFailsOnlyItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := mysqlStore(nil)(t)(t).(shedlock.BatchLocker)
	var cfgs []shedlock.LockConfig
	for _, pair := range collationTwins {
		cfgs = append(cfgs, batchOf(pair[0], "other-"+pair[0], pair[1])...)
	}
	for tick := range 2 {
		res, err := p.TryLockBatch(ctx, cfgs)
		require.NoError(t, err, "tick %d: one member's twin failed the batch", tick)
		for i, pair := range collationTwins {
			first, other, twin := res[3*i], res[3*i+1], res[3*i+2]
			require.NoError(t, first.Err, "tick %d: %q", tick, pair[0])
			require.NoError(t, other.Err, "tick %d: a name beside the twins", tick)
			assert.ErrorIs(t, twin.Err, shedlock.ErrDuplicateName, "tick %d: %q", tick, pair[1])
			assert.ErrorIs(t, twin.Err, shedlock.ErrInvalidConfig, "tick %d: %q", tick, pair[1])
			assert.ErrorContains(t, twin.Err, fmt.Sprintf("%q is the same row as lock %q", pair[1], pair[0]))
			assert.Nil(t, twin.Lock)
			require.NoError(t, first.Lock.Unlock(ctx))
			require.NoError(t, other.Lock.Unlock(ctx))
		}
	}
}

// Names that only the store's collation makes one row are one name to an
// executor on that store: the second job under one is ErrDuplicateName at
// registration, naming both, and the name stays free for another job. A name
// the store has not been asked of (a Run, which registers nothing) fails its
// attempt with ErrDuplicateName, naming its twin, rather than running.
func TestRegistrationRefusesCollationTwins(t *testing.T) {
	t.Parallel()
	newProvider := mysqlStore(nil)(t)
	noop := func(context.Context) error { return nil }
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	}
	registrations := map[string]func(ex *shedlock.Executor, name string) error{
		"FixedDelay": func(ex *shedlock.Executor, name string) error {
			return ex.FixedDelay(cfg(name), time.Hour, noop)
		},
		"Wrap": func(ex *shedlock.Executor, name string) error {
			_, err := ex.Wrap(cfg(name), cron.FuncJob(func() {}))
			return err
		},
		"Schedule": func(ex *shedlock.Executor, name string) error {
			_, err := ex.Schedule(cron.New(), "@hourly", cfg(name), noop)
			return err
		},
	}
	for how, register := range registrations {
		ex := shedlock.NewExecutor(newProvider(t))
		for _, pair := range collationTwins {
			require.NoError(t, register(ex, pair[0]), "%s(%q)", how, pair[0])
			err := register(ex, pair[1])
			require.ErrorIs(t, err, shedlock.ErrDuplicateName, "%s(%q) after %q", how, pair[1], pair[0])
			assert.ErrorContains(t, err, fmt.Sprintf("%q is %q to the store", pair[1], pair[0]))
			assert.NoError(t, register(ex, pair[1]+"-2"), "%s: another name after the refusal", how)
		}
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			ex.WithLock(collationTwins[0][1], time.Minute, 0)
		}()
		err, _ := panicked.(error)
		assert.ErrorIs(t, err, shedlock.ErrDuplicateName, "%s then WithLock", how)
	}

	ex := shedlock.NewExecutor(newProvider(t))
	for _, pair := range collationTwins {
		ran, err := ex.Run(context.Background(), cfg("run-"+pair[0]), noop)
		require.NoError(t, err)
		require.True(t, ran)
		ran, err = ex.Run(context.Background(), cfg("run-"+pair[1]), noop)
		assert.False(t, ran, "%q after %q", pair[1], pair[0])
		assert.ErrorIs(t, err, shedlock.ErrDuplicateName)
		assert.ErrorContains(t, err, fmt.Sprintf("%q is the same row as lock %q", "run-"+pair[1], "run-"+pair[0]))
	}
}

// A row another transaction holds (an operator's SELECT ... FOR UPDATE, left
// open) fails its member alone: the batch's other members are taken, within
// the caller's deadline, and the held one is ErrNotAcquired; once the
// transaction ends, the next batch takes it. MariaDB waits a second for the
// row, then asks which rows are held and sends the others again; PostgreSQL
// skips the row at once (SKIP LOCKED), with every client.
func TestBatchRowHeldByAnotherTransactionFailsItsMemberAlone(t *testing.T) {
	t.Parallel()
	type store struct {
		open        func(t *testing.T) *sql.DB
		table       func(t *testing.T, db *sql.DB) string
		provider    func(t *testing.T, db *sql.DB, table string) shedlock.LockProvider
		placeholder string
	}
	stores := map[string]store{
		"MariaDB": {
			open:  func(t *testing.T) *sql.DB { return testdb.Open(t, nil) },
			table: func(t *testing.T, db *sql.DB) string { return testdb.NewFencedTable(t, db) },
			provider: func(t *testing.T, db *sql.DB, table string) shedlock.LockProvider {
				return newMySQLProvider(t, db, shedlock.WithTableName(table))
			},
			placeholder: "?",
		},
	}
	zoned := stores["MariaDB"] // its statements pin the time zone too (SET STATEMENT time_zone)
	zoned.open = func(t *testing.T) *sql.DB { return testdb.Open(t, map[string]string{"time_zone": "'+05:00'"}) }
	stores["MariaDB/SessionZone"] = zoned
	for _, c := range pgClients {
		stores["PostgreSQL/"+c.name] = store{
			open:  func(t *testing.T) *sql.DB { return c.open(t, nil) },
			table: func(t *testing.T, db *sql.DB) string { return testdb.NewFencedPostgresTable(t, db) },
			provider: func(t *testing.T, db *sql.DB, table string) shedlock.LockProvider {
				return newPostgresProvider(t, db, shedlock.WithTableName(table))
			},
			placeholder: "$1",
		}
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin := s.open(t)
			table := s.table(t, admin)
			p := s.provider(t, s.open(t), table).(shedlock.BatchLocker)
			names := []string{"a", "held", "z"}
			for _, r := range mustBatch(t, p, batchOf(names...)) { // the rows exist, free
				require.NoError(t, r.Err)
				require.NoError(t, r.Lock.Unlock(ctx))
			}

			tx, err := admin.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer tx.Rollback()
			var got string
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT name FROM "+table+" WHERE name = "+s.placeholder+" FOR UPDATE",
				"held").Scan(&got))

			deadline, cancel := context.WithTimeout(ctx, 20*time.Second) // under MariaDB's 50 s lock wait
			defer cancel()
			res, err := p.TryLockBatch(deadline, batchOf(names...))
			require.NoError(t, err, "a row another transaction holds failed the batch")
			require.NoError(t, res[0].Err, "a")
			assert.ErrorIs(t, res[1].Err, shedlock.ErrNotAcquired, "the held row")
			require.NoError(t, res[2].Err, "z")
			require.NoError(t, res[0].Lock.Unlock(ctx))
			require.NoError(t, res[2].Lock.Unlock(ctx))

			require.NoError(t, tx.Rollback())
			for i, r := range mustBatch(t, p, batchOf(names...)) {
				require.NoError(t, r.Err, "%s once the transaction ended", names[i])
			}
		})
	}
}

// Under a nondeterministic PostgreSQL collation, two new names of one batch
// that are one row fail the later alone, as under MariaDB's.
func TestBatchPostgresNondeterministicTwinFailsOnlyItself(t *testing.T) {
	t.Parallel()
	createCaseInsensitiveCollation(t)
	ddl := postgresDDL("varchar(64) COLLATE "+pgCaseInsensitive, "timestamp", "timestamp", "varchar(255)")
	for _, c := range pgClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			table := customTable(t, testdb.OpenPostgres(t, testdb.PGX, nil), ddl)
			p := newPostgresProvider(t, c.open(t, nil), shedlock.WithTableName(table))
			res, err := p.TryLockBatch(context.Background(), batchOf("job", "other", "JOB"))
			require.NoError(t, err, "one member's twin failed the batch")
			require.NoError(t, res[0].Err)
			require.NoError(t, res[1].Err)
			assert.ErrorIs(t, res[2].Err, shedlock.ErrDuplicateName)
			assert.ErrorContains(t, res[2].Err, `"JOB" is the same row as lock "job"`)
		})
	}
}

// A store that cannot be asked at registration (its table not made yet) does
// not refuse the jobs; once it can, the run of the later twin fails with
// ErrDuplicateName naming the other, and the first runs.
func TestCollationTwinRegisteredBeforeTheTableFailsItsRunNamingItsTwin(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, nil)
	table := "shedlock_t_late_" + fmt.Sprint(time.Now().UnixNano())
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	errs := make(chan error, 4)
	ex := shedlock.NewExecutor(newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)),
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventStoreError {
				errs <- ev.Err
			}
		})))
	ran := map[string]bool{}
	var jobs []cron.Job
	for _, name := range collationTwins[0] {
		j, err := ex.Wrap(shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, cron.FuncJob(func() { ran[name] = true }))
		require.NoError(t, err, "registration of %q before the table exists", name)
		jobs = append(jobs, j)
	}
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	require.NoError(t, p.EnsureTable(context.Background()))
	jobs[0].Run()
	jobs[1].Run()
	require.NoError(t, ex.Stop(context.Background()))
	assert.True(t, ran[collationTwins[0][0]], "the first twin")
	assert.False(t, ran[collationTwins[0][1]], "the later twin")
	select {
	case err := <-errs:
		assert.ErrorIs(t, err, shedlock.ErrDuplicateName)
		assert.ErrorContains(t, err, fmt.Sprintf("%q is the same row as lock %q", collationTwins[0][1], collationTwins[0][0]))
	default:
		t.Fatal("the later twin's run reported no error")
	}
}
