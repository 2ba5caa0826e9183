package scenario_test

import (
	"context"
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
// be cancelled a few times.
func config(t *testing.T, driver, dsn string, noLock bool) scenario.Config {
	c := scenario.Demo(binary, driver, dsn, t.TempDir())
	c.Duration, c.NoLock = 4*time.Second, noLock
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

// checkLocked asserts the lock's guarantees from the tables, and that the jobs
// did enough work for the checks to mean something.
func checkLocked(t *testing.T, s shop.Summary) {
	t.Helper()
	for _, j := range s.Jobs {
		runs := 0
		for _, n := range j.RunsByPod {
			runs += n
		}
		if runs == 0 {
			t.Errorf("%s never ran", j.Job)
		}
		if j.OverlappingRuns != 0 {
			t.Errorf("%s: %d runs overlapped another run of the same job", j.Job, j.OverlappingRuns)
		}
	}
	if s.PublishedTwice != 0 {
		t.Errorf("%d events were published more than once", s.PublishedTwice)
	}
	if s.CancelledTwice != 0 {
		t.Errorf("%d orders were cancelled twice", s.CancelledTwice)
	}
	if s.Publishes == 0 || s.OrdersCancelled == 0 {
		t.Errorf("too little work to check: %d publishes, %d orders cancelled", s.Publishes, s.OrdersCancelled)
	}
}

// checkUnlocked asserts that without the lock the same checks do find
// duplicates: they can fail.
func checkUnlocked(t *testing.T, s shop.Summary) {
	t.Helper()
	for _, j := range s.Jobs {
		if len(j.RunsByPod) != 3 {
			t.Errorf("%s: without the lock every pod runs it; ran on %v", j.Job, j.RunsByPod)
		}
	}
	if !s.Duplicates() {
		t.Errorf("without the lock, no overlapping run and no duplicate: the checks cannot fail")
	}
}

func scenarios(t *testing.T, driver string, dsn func(t *testing.T) string) {
	t.Run("WithLock", func(t *testing.T) {
		t.Parallel()
		checkLocked(t, run(t, config(t, driver, dsn(t), false)))
	})
	t.Run("NoLock", func(t *testing.T) {
		t.Parallel()
		checkUnlocked(t, run(t, config(t, driver, dsn(t), true)))
	})
}

func TestThreePodsSQLite(t *testing.T) {
	t.Parallel()
	scenarios(t, shop.SQLite, func(t *testing.T) string { return filepath.Join(t.TempDir(), "orders.db") })
}

func TestThreePodsMySQL(t *testing.T) {
	t.Parallel()
	server := testdb.MySQLDSN(t)
	scenarios(t, shop.MySQL, func(t *testing.T) string {
		dsn, drop, err := scenario.FreshMySQL(context.Background(), server, "shedlock_e2e_")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = drop() })
		return dsn
	})
}
