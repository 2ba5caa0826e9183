package integration_test

import (
	"context"
	"database/sql"
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

// The environment that turns this test binary into a pod of the keep-alive
// process test.
const (
	envKeepAlivePod     = "SHEDLOCK_KEEPALIVE_POD"
	envKeepAliveDSN     = "SHEDLOCK_KEEPALIVE_DSN"
	envKeepAliveTable   = "SHEDLOCK_KEEPALIVE_TABLE"
	envKeepAliveJournal = "SHEDLOCK_KEEPALIVE_JOURNAL"
)

// keepAliveMostFor is the pods' LockAtMostFor: their one run lasts many times
// it. Each extension may wait a sixth of it on the machine's MariaDB, which the
// other tests keep busy: at one second, three that waited past 170 ms in a row
// once lost the lock, as they should.
const keepAliveMostFor = 2 * time.Second

// TestMain lets TestKeepAliveAcrossProcesses, TestFenceStaleWriteAcrossProcesses
// and TestLeaderAcrossProcesses re-run this test binary as a pod.
func TestMain(m *testing.M) {
	if os.Getenv(envKeepAlivePod) != "" {
		os.Exit(keepAlivePodMain())
	}
	if os.Getenv(envFencePod) != "" {
		os.Exit(fencePodMain())
	}
	if os.Getenv(envLeaderPod) != "" {
		os.Exit(leaderPodMain())
	}
	if os.Getenv(envCatchUpPod) != "" {
		os.Exit(catchUpPodMain())
	}
	os.Exit(m.Run())
}

// keepAlivePodMain runs one job with keep-alive, in a fixed-delay loop, until
// SIGTERM. Its task journals its start and never returns on its own: only the
// end of its context (written to the journal with the cause) or a kill ends it.
func keepAlivePodMain() int {
	pod, table, journal := os.Getenv(envKeepAlivePod), os.Getenv(envKeepAliveTable), os.Getenv(envKeepAliveJournal)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", pod)
	db, err := sql.Open("mysql", os.Getenv(envKeepAliveDSN))
	if err != nil {
		log.Error("open", "error", err)
		return 2
	}
	defer db.Close()
	p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table), shedlock.WithLockedBy(pod))
	if err != nil {
		log.Error("provider", "error", err)
		return 2
	}
	ex := shedlock.NewExecutor(p, shedlock.WithKeepAlive(), shedlock.WithExecutorLogger(log))
	cfg := shedlock.LockConfig{Name: "long", LockAtMostFor: keepAliveMostFor}
	err = ex.FixedDelay(cfg, 50*time.Millisecond, func(ctx context.Context) error {
		res, err := db.ExecContext(ctx, "INSERT INTO "+journal+" (pod, started) VALUES (?, UTC_TIMESTAMP(6))", pod)
		if err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		<-ctx.Done()
		_, err = db.ExecContext(context.WithoutCancel(ctx), "UPDATE "+journal+
			" SET ended = UTC_TIMESTAMP(6), cause = ? WHERE id = ?", context.Cause(ctx).Error(), id)
		return err
	})
	if err != nil {
		log.Error("register", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ex.Start()
	<-ctx.Done()
	if err := ex.Stop(context.Background()); err != nil {
		log.Error("stop", "error", err)
		return 1
	}
	return 0
}

// Two OS processes run one job with keep-alive. The first holds it for four
// times its LockAtMostFor, extending all the while: the second never runs it.
// Then the first is SIGKILLed mid-run; the second takes over, no earlier than
// the end the dead holder's last extension wrote, read from the row.
func TestKeepAliveAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	t.Parallel()
	db := testdb.Open(t, nil)
	table := testdb.NewTable(t, db)
	journal := table + "_journal"
	_, err := db.Exec("CREATE TABLE " + journal + ` (id BIGINT AUTO_INCREMENT PRIMARY KEY,
		pod VARCHAR(16) NOT NULL, started DATETIME(6) NOT NULL, ended DATETIME(6) NULL, cause TEXT NULL)`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + journal) })

	logs := t.TempDir()
	start := func(pod string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envKeepAlivePod+"="+pod, envKeepAliveDSN+"="+testdb.MySQLDSN(t),
			envKeepAliveTable+"="+table, envKeepAliveJournal+"="+journal)
		f, err := os.Create(filepath.Join(logs, pod+".log"))
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = f, f
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = f.Close()
			if t.Failed() {
				out, _ := os.ReadFile(f.Name())
				t.Logf("%s's log:\n%s", pod, out)
			}
		})
		return cmd
	}
	type run struct {
		pod          string
		started      time.Time
		ended, cause sql.NullString
	}
	runs := func() []run {
		rows, err := db.Query("SELECT pod, started, ended, cause FROM " + journal + " ORDER BY id")
		require.NoError(t, err)
		defer rows.Close()
		var out []run
		for rows.Next() {
			var r run
			var started string
			require.NoError(t, rows.Scan(&r.pod, &started, &r.ended, &r.cause))
			r.started, err = time.Parse("2006-01-02 15:04:05.999999", started)
			require.NoError(t, err)
			out = append(out, r)
		}
		require.NoError(t, rows.Err())
		return out
	}
	holder := func() (string, time.Time) {
		var by, until string
		require.NoError(t, db.QueryRow("SELECT locked_by, lock_until FROM `"+table+"` WHERE name = 'long'").Scan(&by, &until))
		u, err := time.Parse("2006-01-02 15:04:05.999", until)
		require.NoError(t, err)
		// The owner given to WithLockedBy, a unique suffix, the acquisition's number.
		pod, _, _ := strings.Cut(by, "#")
		pod, _, _ = strings.Cut(pod, ".")
		return pod, u
	}

	a := start("pod-a")
	require.Eventually(t, func() bool { return len(runs()) == 1 }, 20*time.Second, 20*time.Millisecond, "pod-a never ran")
	start("pod-b")

	// pod-a holds the lock for four LockAtMostFor: pod-b, polling every 50ms,
	// never runs, and pod-a's context never ends.
	aStarted := runs()[0].started
	observeUntil := time.Now().Add(4 * keepAliveMostFor)
	var lastUntil time.Time
	for time.Now().Before(observeUntil) {
		rs := runs()
		require.Len(t, rs, 1, "a second run while pod-a holds the lock: %+v", rs)
		require.Equal(t, "pod-a", rs[0].pod)
		require.False(t, rs[0].ended.Valid, "pod-a's context ended: %s", rs[0].cause.String)
		pod, until := holder()
		require.Equal(t, "pod-a", pod)
		lastUntil = until
		time.Sleep(50 * time.Millisecond) // a poll interval
	}
	assert.True(t, lastUntil.After(aStarted.Add(3*keepAliveMostFor)),
		"lock_until moved on with the run: %v, the run began %v", lastUntil, aStarted)

	// SIGKILL pod-a mid-run. Its last lock_until is what the row says until pod-b
	// takes it (an extension sent before the kill may still land).
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	_ = a.Wait()
	killedAt := time.Now()
	deadUntil := time.Time{}
	require.Eventually(t, func() bool {
		pod, until := holder()
		if pod == "pod-a" {
			deadUntil = until
			return false
		}
		return pod == "pod-b"
	}, 2*keepAliveMostFor+10*time.Second, 5*time.Millisecond, "pod-b never took over")
	require.False(t, deadUntil.IsZero())
	tookOverAfter := time.Since(killedAt)

	require.Eventually(t, func() bool { return len(runs()) == 2 }, 10*time.Second, 10*time.Millisecond)
	rs := runs()
	assert.Equal(t, "pod-b", rs[1].pod)
	assert.False(t, rs[0].ended.Valid, "pod-a was killed, not ended")
	assert.False(t, rs[1].started.Before(deadUntil),
		"pod-b began %v, before the dead holder's lock ended %v", rs[1].started, deadUntil)
	assert.Less(t, tookOverAfter, keepAliveMostFor+2*time.Second,
		"a dead holder's lock is free within LockAtMostFor of its last extension")
	t.Logf("pod-a ran %v with a %v lock; killed; pod-b took over %v later, %v after the dead lock's end",
		killedAt.Sub(aStarted).Round(time.Millisecond), keepAliveMostFor, tookOverAfter.Round(time.Millisecond),
		rs[1].started.Sub(deadUntil).Round(time.Millisecond))
}
