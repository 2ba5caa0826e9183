package integration_test

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Java ShedLock 7.9's PostgreSQL statements with usingDbTime(), as its
// PostgresSqlServerTimeStatementsSource sends them, with the named parameters
// :name, :lockAtMostForInterval (or :lockAtLeastForInterval) and :lockedBy
// turned into $1, $2 and $3. Durations are seconds with millisecond scale.
const (
	javaAcquire = "INSERT INTO {t}(name, lock_until, locked_at, locked_by) " +
		"VALUES($1, timezone('utc', CURRENT_TIMESTAMP) + make_interval(secs => $2), " +
		"timezone('utc', CURRENT_TIMESTAMP), $3) " +
		"ON CONFLICT (name) DO UPDATE " +
		"SET lock_until = timezone('utc', CURRENT_TIMESTAMP) + make_interval(secs => $2), " +
		"locked_at = timezone('utc', CURRENT_TIMESTAMP), locked_by = $3 " +
		"WHERE {t}.name = $1 AND {t}.lock_until <= timezone('utc', CURRENT_TIMESTAMP)"
	javaRelease = "UPDATE {t} SET lock_until = CASE " +
		"WHEN locked_at + make_interval(secs => $2) > timezone('utc', CURRENT_TIMESTAMP) " +
		"THEN locked_at + make_interval(secs => $2) " +
		"ELSE timezone('utc', CURRENT_TIMESTAMP) END " +
		"WHERE name = $1 AND locked_by = $3"
	javaExtend = "UPDATE {t} SET lock_until = timezone('utc', CURRENT_TIMESTAMP) + make_interval(secs => $2) " +
		"WHERE name = $1 AND locked_by = $3 AND lock_until > timezone('utc', CURRENT_TIMESTAMP)"
)

// execer is a pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// javaPod is a Java ShedLock service on the table: its statements, its owner
// (Java writes the host name to locked_by, the same for every acquisition).
type javaPod struct {
	db    execer
	table string
	host  string
}

func (j *javaPod) stmt(s string) string { return strings.ReplaceAll(s, "{t}", j.table) }

func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

func (j *javaPod) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	return j.tryLockIn(ctx, j.db, cfg)
}

// tryLockIn sends the acquisition through x, such as a transaction the caller
// opened earlier.
func (j *javaPod) tryLockIn(ctx context.Context, x execer, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	res, err := x.ExecContext(ctx, j.stmt(javaAcquire), cfg.Name, seconds(cfg.LockAtMostFor), j.host)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, shedlock.ErrNotAcquired
	}
	return &javaLock{j: j, name: cfg.Name, least: cfg.LockAtLeastFor}, nil
}

type javaLock struct {
	j     *javaPod
	name  string
	least time.Duration
}

func (l *javaLock) Unlock(ctx context.Context) error {
	_, err := l.j.db.ExecContext(ctx, l.j.stmt(javaRelease), l.name, seconds(l.least), l.j.host)
	return err
}

func (l *javaLock) Extend(ctx context.Context, most, least time.Duration) error {
	res, err := l.j.db.ExecContext(ctx, l.j.stmt(javaExtend), l.name, seconds(most), l.j.host)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return shedlock.ErrLockLost
	}
	l.least = least
	return nil
}

// Go and Java pods on one table exclude each other both ways: each holds
// against the other, and each takes the lock the other released. The Go pod's
// session is in +09, the Java pod's in -12: Java converts CURRENT_TIMESTAMP to
// UTC itself, as the provider does.
func TestPostgresJavaAndGoExcludeEachOther(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := testdb.NewPostgresTable(t, admin)
	for _, c := range pgClients {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			java := &javaPod{db: testdb.OpenPostgres(t, testdb.PGX, map[string]string{"TimeZone": "-12"}), table: table, host: "java-pod-1"}
			goPod := newPostgresProvider(t, c.open(t, map[string]string{"TimeZone": "+09"}), shedlock.WithTableName(table))
			cfg := shedlock.LockConfig{Name: "job-" + c.name, LockAtMostFor: time.Minute}

			jl, err := java.TryLock(ctx, cfg)
			require.NoError(t, err, "Java first")
			_, err = goPod.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Go while Java holds")
			require.NoError(t, jl.Extend(ctx, time.Minute, 0))
			_, err = goPod.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Go while Java holds, extended")
			require.NoError(t, jl.Unlock(ctx))

			gl, err := goPod.TryLock(ctx, cfg)
			require.NoError(t, err, "Go after Java released")
			_, err = java.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Java while Go holds")
			require.NoError(t, gl.Extend(ctx, time.Minute, 0))
			_, err = java.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Java while Go holds, extended")
			require.NoError(t, gl.Unlock(ctx))

			jl, err = java.TryLock(ctx, cfg)
			require.NoError(t, err, "Java after Go released")
			require.ErrorIs(t, gl.Unlock(ctx), shedlock.ErrLockLost, "Go's old handle")
			_, err = goPod.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired, "Go's old handle released nothing")
			require.NoError(t, jl.Unlock(ctx))
		})
	}
}

// A mixed fleet competes: Java pods and Go pods of every driver take turns as
// the providers of RunContention, which fails on any overlap or lost update.
func TestPostgresJavaAndGoContention(t *testing.T) {
	t.Parallel()
	store := func(t *testing.T) shedlocktest.NewProviderFunc {
		table := testdb.NewPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			n++
			if n%2 == 0 {
				c := pgClients[(n/2)%len(pgClients)]
				return newPostgresProvider(t, c.open(t, map[string]string{"TimeZone": pgTestZones[n%len(pgTestZones)]}),
					shedlock.WithTableName(table))
			}
			return &javaPod{db: testdb.OpenPostgres(t, testdb.PGX, nil), table: table, host: "java-pod-" + string(rune('a'+n))}
		}
	}
	shedlocktest.RunContention(t, store, shedlocktest.Contention{RunsPerName: 100})
}

// Java ShedLock #3577: CURRENT_TIMESTAMP is the start of the transaction. Java's
// acquisition sent in a transaction opened earlier writes a lock that ends that
// much early: here already over, so a Go pod takes it at once while the Java
// pod believes it holds it. The provider's own statements, as the server
// received them, read statement_timestamp() and no frozen clock; sent in the
// same stale transaction, they write a lock that holds. Each lock's end is
// read in its transaction, against the server's clock: nothing depends on how
// fast the test runs.
func TestPostgresStaleTransactionTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := testdb.NewPostgresTable(t, admin)
	goPod := warmProvider(t, newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table)))
	const age, most = 600 * time.Millisecond, 500 * time.Millisecond

	// staleTx opens a transaction on db and lets it age: its CURRENT_TIMESTAMP
	// stays at its start.
	staleTx := func(db *sql.DB) *sql.Tx {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() }) // a failed check leaves it open, and the table's drop would wait on it
		_, err = tx.ExecContext(ctx, "SELECT pg_sleep($1)", age.Seconds())
		require.NoError(t, err)
		return tx
	}
	// written reports, in tx, how long after the transaction began the lock
	// name ends, and whether it had already ended when the statement that
	// wrote it ran (the last one sent).
	written := func(tx *sql.Tx, name string) (fromStart time.Duration, over bool) {
		var secs float64
		err := tx.QueryRowContext(ctx, "SELECT EXTRACT(EPOCH FROM lock_until - timezone('utc', CURRENT_TIMESTAMP)), "+
			"lock_until < timezone('utc', statement_timestamp()) FROM "+table+" WHERE name = $1", name).Scan(&secs, &over)
		require.NoError(t, err)
		return time.Duration(secs * float64(time.Second)), over
	}

	t.Run("JavaInStaleTransaction", func(t *testing.T) {
		java := &javaPod{db: admin, table: table, host: "java-pod-1"}
		cfg := shedlock.LockConfig{Name: "java-job", LockAtMostFor: most}
		tx := staleTx(admin)
		_, err := java.tryLockIn(ctx, tx, cfg)
		require.NoError(t, err, "Java takes the lock")
		fromStart, over := written(tx, cfg.Name)
		require.Equal(t, most, fromStart.Round(time.Millisecond), "Java's lock counts from the transaction's start")
		require.True(t, over, "the hazard: Java's %v lock was over when written, %v into its transaction", most, age)
		require.NoError(t, tx.Commit())
		l, err := goPod.TryLock(ctx, cfg)
		require.NoError(t, err, "a Go pod takes the lock the Java pod believes it holds")
		require.NoError(t, l.Unlock(ctx))
	})

	t.Run("ProviderStatements", func(t *testing.T) {
		app := "shedlock_text_" + randomHex(4)
		p := newPostgresProvider(t, pgxClient.open(t, map[string]string{"application_name": app}), shedlock.WithTableName(table))
		// Long enough that the lock is still held, on this process's clock,
		// when Extend and Unlock come on a slow machine: else they send nothing.
		cfg := shedlock.LockConfig{Name: "go-job", LockAtMostFor: time.Minute}
		// captured runs f while another transaction holds the row, and returns
		// the statement f waits in, as the server received it.
		captured := func(f func() error) string {
			tx, err := admin.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.Exec("SELECT 1 FROM "+table+" WHERE name = $1 FOR UPDATE", cfg.Name)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- f() }()
			query := waitForLockWait(t, admin, app)
			require.NoError(t, tx.Rollback())
			require.NoError(t, <-done)
			return query
		}
		_, err := admin.Exec("INSERT INTO "+table+" VALUES ($1, '2000-01-01', '2000-01-01', 'nobody')", cfg.Name)
		require.NoError(t, err)
		var l shedlock.Lock
		acquire := captured(func() (err error) { l, err = p.TryLock(ctx, cfg); return err })
		extend := captured(func() error { return l.Extend(ctx, cfg.LockAtMostFor, 0) })
		release := captured(func() error { return l.Unlock(ctx) })
		frozen := regexp.MustCompile(`(?i)current_timestamp|\bnow\(|transaction_timestamp|localtimestamp|clock_timestamp`)
		for what, q := range map[string]string{"acquire": acquire, "extend": extend, "release": release} {
			assert.Contains(t, q, "statement_timestamp()", what)
			assert.NotRegexp(t, frozen, q, what)
			t.Logf("%s: %s", what, q)
		}

		// The acquisition's text in a stale transaction holds for its
		// LockAtMostFor after the statement, not after the transaction began.
		token := "stale-tx-pod.1"
		tx := staleTx(admin)
		res, err := tx.ExecContext(ctx, acquire, cfg.Name, most.Milliseconds(), token)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "took the released lock")
		fromStart, over := written(tx, cfg.Name)
		require.GreaterOrEqual(t, fromStart, age+most, "the lock counts from its statement, %v into the transaction", age)
		require.False(t, over, "the lock holds when written")
		require.NoError(t, tx.Commit())
	})
}
