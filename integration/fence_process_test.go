package integration_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// The environment that turns this test binary into a pod of the stale-write
// test.
const (
	envFencePod    = "SHEDLOCK_FENCE_POD"   // the pod's name: "paused" waits for a line on stdin before it writes
	envFenceStore  = "SHEDLOCK_FENCE_STORE" // a key of fenceProcessStores
	envFenceDSN    = "SHEDLOCK_FENCE_DSN"   //
	envFenceTable  = "SHEDLOCK_FENCE_TABLE" // the lock table; its data table and journal are named after it
	envFenceGuard  = "SHEDLOCK_FENCE_GUARD" // "fenced": the write passes the token and is guarded by it
	fenceMostFor   = 500 * time.Millisecond // the pods' LockAtMostFor; they keep it alive
	fenceLockName  = "report"               //
	fencePodPaused = "paused"               //
)

// fenceProcessStore is one store's statements for the stale-write test: the
// data a job protects, and a journal of what each pod did. {d} is the data
// table, {j} the journal.
type fenceProcessStore struct {
	driver    string
	provider  func(db *sql.DB, table, pod string) (shedlock.LockProvider, error)
	setup     []string
	journal   string // pod, event, fence, rows, ctx_done
	plain     string // writer, id
	fenced    string // writer, fence, id, fence
	dsn       func(t testing.TB) string
	lockTable func(t *testing.T) string
}

var fenceProcessStores = map[string]fenceProcessStore{
	"MySQL": {
		driver: "mysql",
		provider: func(db *sql.DB, table, pod string) (shedlock.LockProvider, error) {
			return shedlock.NewMySQLProvider(db, shedlock.WithTableName(table), shedlock.WithLockedBy(pod))
		},
		setup: []string{
			"CREATE TABLE {d} (id INT PRIMARY KEY, writer VARCHAR(16) NOT NULL, last_fence BIGINT)",
			"INSERT INTO {d} VALUES (1, 'nobody', NULL)",
			"CREATE TABLE {j} (at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), pod VARCHAR(16), event VARCHAR(16), " +
				"fence BIGINT, n BIGINT, ctx_done BOOLEAN)",
		},
		journal:   "INSERT INTO {j} (pod, event, fence, n, ctx_done) VALUES (?, ?, ?, ?, ?)",
		plain:     "UPDATE {d} SET writer = ? WHERE id = ?",
		fenced:    "UPDATE {d} SET writer = ?, last_fence = ? WHERE id = ? AND (last_fence IS NULL OR last_fence <= ?)",
		dsn:       testdb.MySQLDSN,
		lockTable: func(t *testing.T) string { return testdb.NewFencedTable(t, testdb.Open(t, nil)) },
	},
	"PostgreSQL": {
		driver: testdb.PGX,
		provider: func(db *sql.DB, table, pod string) (shedlock.LockProvider, error) {
			return shedlock.NewPostgresProvider(db, shedlock.WithTableName(table), shedlock.WithLockedBy(pod))
		},
		setup: []string{
			"CREATE TABLE {d} (id INT PRIMARY KEY, writer TEXT NOT NULL, last_fence BIGINT)",
			"INSERT INTO {d} VALUES (1, 'nobody', NULL)",
			"CREATE TABLE {j} (at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), pod TEXT, event TEXT, fence BIGINT, n BIGINT, ctx_done BOOLEAN)",
		},
		journal: "INSERT INTO {j} (pod, event, fence, n, ctx_done) VALUES ($1, $2, $3, $4, $5)",
		plain:   "UPDATE {d} SET writer = $1 WHERE id = $2",
		fenced:  "UPDATE {d} SET writer = $1, last_fence = $2 WHERE id = $3 AND (last_fence IS NULL OR last_fence <= $4)",
		dsn:     testdb.PostgresDSN,
		lockTable: func(t *testing.T) string {
			return testdb.NewFencedPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
		},
	},
}

func (s fenceProcessStore) sql(stmt, table string) string {
	return strings.NewReplacer("{d}", table+"_data", "{j}", table+"_journal").Replace(stmt)
}

// fencePodMain takes the lock in a fixed-delay loop with keep-alive, and writes
// its name into the data row once per run. The paused pod waits, after it took
// the lock, for a line on stdin (the test stops the process meanwhile, past its
// lease, and another pod takes over); then it writes as a paused holder would,
// its decision to write already made: through a context that its lost lock does
// not end.
func fencePodMain() int {
	pod, table := os.Getenv(envFencePod), os.Getenv(envFenceTable)
	store := fenceProcessStores[os.Getenv(envFenceStore)]
	fenced := os.Getenv(envFenceGuard) == "fenced"
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", pod)
	db, err := sql.Open(store.driver, os.Getenv(envFenceDSN))
	if err != nil {
		log.Error("open", "error", err)
		return 2
	}
	defer db.Close()
	p, err := store.provider(db, table, pod)
	if err != nil {
		log.Error("provider", "error", err)
		return 2
	}
	journal := func(event string, fence, n int64, ctxDone bool) error {
		_, err := db.Exec(store.sql(store.journal, table), pod, event, fence, n, ctxDone)
		return err
	}
	stdin := bufio.NewReader(os.Stdin)
	ex := shedlock.NewExecutor(p, shedlock.WithKeepAlive(), shedlock.WithExecutorLogger(log))
	err = ex.FixedDelay(shedlock.LockConfig{Name: fenceLockName, LockAtMostFor: fenceMostFor}, 20*time.Millisecond,
		func(ctx context.Context) error {
			fence, _ := shedlock.FenceFromContext(ctx)
			if err := journal("acquired", fence, 0, false); err != nil {
				return err
			}
			if pod == fencePodPaused {
				if _, err := stdin.ReadString('\n'); err != nil {
					return err
				}
			}
			ctxDone := ctx.Err() != nil
			write := context.WithoutCancel(ctx)
			var res sql.Result
			if fenced {
				res, err = db.ExecContext(write, store.sql(store.fenced, table), pod, fence, 1, fence)
			} else {
				res, err = db.ExecContext(write, store.sql(store.plain, table), pod, 1)
			}
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			if err := journal("wrote", fence, n, ctxDone); err != nil {
				return err
			}
			if pod == fencePodPaused {
				<-ctx.Done() // one write is the paused pod's whole part
			}
			return nil
		})
	if err != nil {
		log.Error("register", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ex.Start()
	<-ctx.Done()
	_ = ex.Stop(context.Background())
	return 0
}

// staleWrite is what one trial found.
type staleWrite struct {
	landed       bool  // the paused pod's late write changed the row
	pausedFence  int64 // the paused pod's token
	takeover     int64 // the token of the pod that took over
	ctxDoneFirst bool  // the paused pod's task context had ended when it wrote
	writer       string
}

// staleWriteTrial runs one trial: the paused pod takes the lock and is stopped
// (SIGSTOP) past its lease; the other pod takes over and writes; the paused pod
// is resumed (SIGCONT) and writes late.
func staleWriteTrial(t *testing.T, storeName string, fenced bool) staleWrite {
	store := fenceProcessStores[storeName]
	table := store.lockTable(t)
	admin, err := sql.Open(store.driver, store.dsn(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	for _, stmt := range store.setup {
		_, err := admin.Exec(store.sql(stmt, table))
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(store.sql("DROP TABLE {d}", table))
		_, _ = admin.Exec(store.sql("DROP TABLE {j}", table))
	})
	guard := "plain"
	if fenced {
		guard = "fenced"
	}
	logs := t.TempDir()
	start := func(pod string) (*exec.Cmd, io.WriteCloser) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envFencePod+"="+pod, envFenceStore+"="+storeName, envFenceDSN+"="+store.dsn(t),
			envFenceTable+"="+table, envFenceGuard+"="+guard)
		f, err := os.Create(filepath.Join(logs, pod+".log"))
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = f, f
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = f.Close()
			if t.Failed() {
				out, _ := os.ReadFile(f.Name())
				t.Logf("%s's log:\n%s", pod, out)
			}
		})
		return cmd, stdin
	}
	// event returns the fence, rows and ctx_done of pod's first event, once it is there.
	event := func(pod, ev string) (fence, n int64, ctxDone bool) {
		require.Eventually(t, func() bool {
			err := admin.QueryRow(store.sql("SELECT fence, n, ctx_done FROM {j} WHERE pod = '"+pod+"' AND event = '"+ev+"' ORDER BY at LIMIT 1", table)).
				Scan(&fence, &n, &ctxDone)
			if errors.Is(err, sql.ErrNoRows) {
				return false
			}
			require.NoError(t, err)
			return true
		}, 30*time.Second, 5*time.Millisecond, "%s never %s", pod, ev)
		return fence, n, ctxDone
	}

	paused, pausedIn := start(fencePodPaused)
	pausedFence, _, _ := event(fencePodPaused, "acquired")
	require.NoError(t, paused.Process.Signal(syscall.SIGSTOP))
	start("takeover")
	takeover, n, _ := event("takeover", "wrote")
	require.EqualValues(t, 1, n, "the pod that took over wrote")
	require.NoError(t, paused.Process.Signal(syscall.SIGCONT))
	_, err = io.WriteString(pausedIn, "write\n")
	require.NoError(t, err)
	_, n, ctxDone := event(fencePodPaused, "wrote")

	var r staleWrite
	require.NoError(t, admin.QueryRow(store.sql("SELECT writer FROM {d} WHERE id = 1", table)).Scan(&r.writer))
	r.landed, r.pausedFence, r.takeover, r.ctxDoneFirst = n == 1, pausedFence, takeover, ctxDone
	return r
}

// A holder stopped past its lease writes after another pod took the lock over
// and wrote. Without tokens its stale write lands, overwriting the newer one;
// with the fencing token in the write's WHERE, the store refuses it.
func TestFenceStaleWriteAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	t.Parallel()
	// Each trial starts two processes of this binary. The outcome does not
	// depend on timing: without tokens the stale write lands every time, with
	// them never, so a broken fence fails the first fenced trial.
	const trials = 3
	for storeName := range fenceProcessStores {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			for _, fenced := range []bool{false, true} {
				landed := 0
				for i := range trials {
					r := staleWriteTrial(t, storeName, fenced)
					require.Greater(t, r.takeover, r.pausedFence, "the pod that took over has the larger token")
					if r.landed {
						landed++
					}
					if fenced {
						assert.False(t, r.landed, "trial %d: the stale write landed with tokens", i)
						assert.Equal(t, "takeover", r.writer, "trial %d: the row keeps the newer write", i)
					}
					t.Logf("fenced=%v trial %d: stale write landed=%v (row written by %s; the paused pod's context had ended: %v)",
						fenced, i, r.landed, r.writer, r.ctxDoneFirst)
				}
				t.Logf("fenced=%v: the stale write landed in %d of %d trials", fenced, landed, trials)
				if !fenced {
					assert.Equal(t, trials, landed, "without tokens, nothing stops the stale write")
				}
			}
		})
	}
}
