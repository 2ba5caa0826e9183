package chaos_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/chaos"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// TestMain lets the supervisor re-run this test binary as a pod.
func TestMain(m *testing.M) {
	if chaos.IsPod() {
		os.Exit(chaos.PodMain())
	}
	os.Exit(m.Run())
}

// The short form of `make chaos`: five pod processes, SIGKILLs and graceful
// stops for about 20 seconds, every assertion checked from the journal. The
// locks are in MySQL/MariaDB, like the journal.
func TestChaosShort(t *testing.T) {
	chaosShort(t, chaos.MySQL, testdb.MySQLDSN)
}

// The same with the locks in PostgreSQL (a table of the run's own on the test
// server); the journal stays in MySQL/MariaDB.
func TestChaosShortPostgres(t *testing.T) {
	chaosShort(t, chaos.Postgres, testdb.PostgresDSN)
}

// The same with the locks in Redis (an env of the run's own on the test server).
func TestChaosShortRedis(t *testing.T) {
	chaosShort(t, chaos.Redis, testdb.RedisAddr)
}

// The same with the locks in a private three-member etcd cluster (an env of
// the run's own).
func TestChaosShortEtcd(t *testing.T) {
	chaosShort(t, chaos.Etcd, func(t testing.TB) string {
		return strings.Join(etcdcluster.New(t, 3).Endpoints(), ",")
	})
}

// The same with the locks in a SQLite file that the five processes share.
func TestChaosShortSQLite(t *testing.T) {
	chaosShort(t, chaos.SQLite, func(t testing.TB) string { return filepath.Join(t.TempDir(), "locks.db") })
}

func chaosShort(t *testing.T, store chaos.Store, storeDSN func(testing.TB) string) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	ctx := t.Context()
	db := testdb.Open(t, nil)
	dsn := storeDSN(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	table := "shedlock_chaos_" + hex.EncodeToString(b[:])
	journal := table + "_journal"
	cleanup, err := store.Prepare(ctx, dsn, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cleanup(); err != nil {
			t.Errorf("clean up the lock store: %v", err)
		}
	})
	if err := chaos.CreateJournal(ctx, db, journal); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + journal) })

	params := chaos.Params{
		LockAtMostFor:  4 * time.Second,
		LockAtLeastFor: 100 * time.Millisecond,
		Delay:          200 * time.Millisecond,
		WorkMin:        100 * time.Millisecond,
		WorkMax:        400 * time.Millisecond,
	}
	if store == chaos.Etcd {
		// etcd would keep a 100ms LockAtLeastFor for its minimum TTL (2s):
		// five pods would share one run of a job every two seconds, too few
		// for every pod to run every job before the run ends.
		params.LockAtLeastFor = 0
	}
	const pods = 5
	slack := 2*time.Second + store.Slack() // two shared cores, the race detector, other tests; the store's own rounding
	logDir := t.TempDir()
	events, end, err := chaos.Supervise(ctx, chaos.SupervisorConfig{
		Spec: chaos.PodSpec{Params: params, DSN: testdb.MySQLDSN(t), Journal: journal,
			Store: store, StoreDSN: dsn, Table: table},
		Pods:         pods,
		MinDuration:  16 * time.Second,
		MaxDuration:  45 * time.Second,
		Every:        2 * time.Second,
		StopOneIn:    3,
		HolderShare:  0.8,
		RestartAfter: 300 * time.Millisecond,
		Settle:       params.LockAtMostFor + params.Delay + slack,
		Command:      func() *exec.Cmd { return exec.Command(os.Args[0], "-test.run=^$") },
		LogDir:       logDir,
		DB:           db,
		Log:          slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		t.Fatalf("supervise: %v (pod logs in %s)", err, logDir)
	}
	runs, err := chaos.ReadJournal(ctx, db, journal)
	if err != nil {
		t.Fatal(err)
	}
	rep := chaos.Analyze(runs, events, params, pods, slack, end)
	t.Log(rep) // the figures, and the first violations
	if len(rep.Violations) > 0 {
		t.Errorf("%d violations (listed above)", len(rep.Violations))
	}
	// The bounds above are only tested if the run hit holders both ways.
	if rep.HolderKills == 0 || rep.HolderStops == 0 {
		t.Errorf("no SIGKILL (%d) or no graceful stop (%d) hit a pod inside a run: takeover bounds untested",
			rep.HolderKills, rep.HolderStops)
	}
	if len(rep.Violations) > 0 {
		dumpLogs(t, logDir, pods)
	}
}

func dumpLogs(t *testing.T, dir string, pods int) {
	for i := range pods {
		b, _ := os.ReadFile(fmt.Sprintf("%s/pod-%d.log", dir, i))
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("pod-%d log (tail):\n%s", i, b)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
