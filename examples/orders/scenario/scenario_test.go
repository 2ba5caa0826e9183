package scenario_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/examples/orders/scenario"
	"github.com/shedlock-go/shedlock/examples/orders/shop"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// binary is the orders example, built once for every test in this package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "scenario-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	binary, err = scenario.Build(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// config is the demo's scenario, shortened: long enough for orders to expire and
// be cancelled a few times, and on until the checks have what they need.
func config(t *testing.T, driver, dsn string, noLock bool) scenario.Config {
	c := scenario.Demo(binary, driver, dsn, t.TempDir())
	c.Duration, c.MaxDuration, c.NoLock = 4*time.Second, time.Minute, noLock
	c.Until = enoughWork
	if noLock {
		c.Until = func(s shop.Summary) bool { return len(unlockedProblems(s)) == 0 }
	}
	return c
}

func run(t *testing.T, c scenario.Config) shop.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := scenario.Run(ctx, c)
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	var b strings.Builder
	_ = s.Print(&b)
	t.Logf("no-lock=%v:\n%s", c.NoLock, b.String())
	return s
}

// enoughWork says whether every job ran and orders were cancelled and events
// published: enough for the checks to mean something.
func enoughWork(s shop.Summary) bool {
	for _, j := range s.Jobs {
		if len(j.RunsByPod) == 0 {
			return false
		}
	}
	return s.Publishes > 0 && s.OrdersCancelled > 0
}

// lockedProblems lists what breaks the lock's guarantees in the tables, and
// too little work for the checks to mean something.
func lockedProblems(s shop.Summary) []string {
	var p []string
	for _, j := range s.Jobs {
		if j.OverlappingRuns != 0 {
			p = append(p, fmt.Sprintf("%s: %d runs overlapped another run of the same job", j.Job, j.OverlappingRuns))
		}
	}
	if s.PublishedTwice != 0 {
		p = append(p, fmt.Sprintf("%d events were published more than once", s.PublishedTwice))
	}
	if s.CancelledTwice != 0 {
		p = append(p, fmt.Sprintf("%d orders were cancelled twice", s.CancelledTwice))
	}
	if !enoughWork(s) {
		p = append(p, fmt.Sprintf("too little work to check: %d publishes, %d orders cancelled, runs %v",
			s.Publishes, s.OrdersCancelled, s.Jobs))
	}
	return p
}

// unlockedProblems lists what says that, without the lock, the same checks
// would not find duplicates: that they could not fail.
func unlockedProblems(s shop.Summary) []string {
	var p []string
	for _, j := range s.Jobs {
		if len(j.RunsByPod) != 3 {
			p = append(p, fmt.Sprintf("%s: without the lock every pod runs it; ran on %v", j.Job, j.RunsByPod))
		}
	}
	if !s.Duplicates() {
		p = append(p, "without the lock, no overlapping run and no duplicate: the checks cannot fail")
	}
	return p
}

// checkLocked fails the test with each of lockedProblems, and then shows the
// journal and the pods' logs: what ran when, and what each pod said of it.
func checkLocked(t *testing.T, c scenario.Config, s shop.Summary) {
	t.Helper()
	problems := lockedProblems(s)
	assertNone(t, problems)
	if len(problems) == 0 {
		return
	}
	db, err := shop.Open(c.Driver, c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SELECT job, pod, started_at, finished_at FROM job_runs ORDER BY job, started_at")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var job, pod, started string
		var finished sql.NullString
		if err := rows.Scan(&job, &pod, &started, &finished); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s .. %s\n", job, pod, started, finished.String)
	}
	t.Logf("the journal:\n%s", b.String())
	logs, _ := filepath.Glob(filepath.Join(c.LogDir, "*.log"))
	for _, l := range logs {
		out, _ := os.ReadFile(l)
		if len(out) > 6000 {
			out = out[len(out)-6000:]
		}
		t.Logf("%s (tail):\n%s", filepath.Base(l), out)
	}
}

// assertNone fails the test with each problem.
func assertNone(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

func scenarios(t *testing.T, driver string, dsn func(t *testing.T) string) {
	t.Run("WithLock", func(t *testing.T) {
		t.Parallel()
		c := config(t, driver, dsn(t), false)
		checkLocked(t, c, run(t, c))
	})
	t.Run("NoLock", func(t *testing.T) {
		t.Parallel()
		assertNone(t, unlockedProblems(run(t, config(t, driver, dsn(t), true))))
	})
}

func TestThreePodsSQLite(t *testing.T) {
	t.Parallel()
	scenarios(t, shop.SQLite, func(t *testing.T) string { return filepath.Join(t.TempDir(), "orders.db") })
}

func TestThreePodsMySQL(t *testing.T) {
	t.Parallel()
	scenarios(t, shop.MySQL, fresh(scenario.FreshMySQL, testdb.MySQLDSN(t)))
}

func TestThreePodsPostgres(t *testing.T) {
	t.Parallel()
	scenarios(t, shop.Postgres, fresh(scenario.FreshPostgres, testdb.PostgresDSN(t)))
}

// The data in PostgreSQL, the locks in Redis: an env of the test's own, whose
// keys expire by themselves (LockAtMostFor is 10s at most).
func TestThreePodsRedisLocks(t *testing.T) {
	t.Parallel()
	redisAddr := testdb.RedisAddr(t)
	dsn := fresh(scenario.FreshPostgres, testdb.PostgresDSN(t))(t)
	c := config(t, shop.Postgres, dsn, false)
	var b [4]byte
	_, _ = rand.Read(b[:])
	c.Locks = shop.LockStore{Kind: shop.Redis, RedisAddr: redisAddr, RedisEnv: "e2e-" + hex.EncodeToString(b[:])}
	checkLocked(t, c, run(t, c))

	// The locks were Redis's: the data's database has no lock table.
	db, err := shop.Open(shop.Postgres, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var table sql.NullString
	if err := db.QueryRowContext(context.Background(), "SELECT to_regclass('shedlock')::text").Scan(&table); err != nil {
		t.Fatal(err)
	}
	if table.Valid {
		t.Errorf("with -lock-store redis the data's database has a lock table %q", table.String)
	}
}

// fresh returns a function that makes an empty database on server, dropped
// when the test ends.
func fresh(create func(ctx context.Context, server, prefix string) (string, func() error, error), server string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dsn, drop, err := create(context.Background(), server, "shedlock_e2e_")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := drop(); err != nil {
				t.Errorf("drop the test's database: %v", err)
			}
		})
		return dsn
	}
}
