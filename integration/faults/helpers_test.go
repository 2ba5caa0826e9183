package faults_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// rig is one test's setup: a lock table, a direct pool for checks, and pods
// that reach the database through proxies of their own.
type rig struct {
	t     *testing.T
	admin *sql.DB // direct: the truth about the table, whatever the proxies do
	table string
	log   *recorder
}

func newRig(t *testing.T) *rig {
	// The goroutines alive now are not this test's. Registered first, the check
	// runs last: after every executor, pool and proxy of the test is closed.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	admin := testdb.Open(t, nil)
	return &rig{t: t, admin: admin, table: testdb.NewTable(t, admin), log: &recorder{}}
}

// pod is a provider whose every connection goes through its own proxy.
type pod struct {
	proxy    *faultproxy.Proxy
	provider *shedlock.MySQLProvider
}

func (r *rig) pod(opts ...shedlock.ProviderOption) *pod {
	t := r.t
	cfg, err := mysql.ParseDSN(testdb.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	px, err := faultproxy.Start(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := px.Close(); err != nil {
			t.Errorf("proxy close: %v", err)
		}
	})
	cfg.Addr = px.Addr()
	// Short timeouts: a dead connection must turn into an error, not a hang.
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = time.Second, 3*time.Second, 3*time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	opts = append([]shedlock.ProviderOption{shedlock.WithTableName(r.table),
		shedlock.WithLogger(r.log.logger()), shedlock.WithReleaseRetries(2, 50*time.Millisecond)}, opts...)
	p, err := shedlock.NewMySQLProvider(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &pod{proxy: px, provider: p}
}

// executor returns an executor on the pod that logs to the rig's recorder.
func (r *rig) executor(p *pod) *shedlock.Executor {
	ex := shedlock.NewExecutor(p.provider, shedlock.WithExecutorLogger(r.log.logger()),
		shedlock.WithReleaseTimeout(5*time.Second))
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ex.Stop(ctx); err != nil {
			r.t.Errorf("executor stop: %v", err)
		}
	})
	return ex
}

// holder returns which provider holds name now by the database clock ("" if
// nobody), as its LockedBy (locked_by less the acquisition's number), and the
// lock's remaining time.
func (r *rig) holder(name string) (owner string, left time.Duration) {
	r.t.Helper()
	var ms int64
	// UNIX_TIMESTAMP of a TIMESTAMP is absolute, whatever the session's zone.
	err := r.admin.QueryRow("SELECT locked_by, CAST((UNIX_TIMESTAMP(lock_until) - UNIX_TIMESTAMP(NOW(6))) * 1000 AS SIGNED) FROM "+
		r.table+" WHERE name = ?", name).Scan(&owner, &ms)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0
	}
	if err != nil {
		r.t.Fatalf("read lock row: %v", err)
	}
	if ms <= 0 {
		return "", time.Duration(ms) * time.Millisecond
	}
	if i := strings.LastIndexByte(owner, '.'); i >= 0 {
		owner = owner[:i]
	}
	return owner, time.Duration(ms) * time.Millisecond
}

// guard wraps a task: it counts the task's runs and checks, through the direct
// pool, that the lock is held by owner for the whole run.
type guard struct {
	r       *rig
	name    string
	owner   string
	runs    atomic.Int64
	started chan time.Time // one value per run, when it began (buffered)
	mu      sync.Mutex
	bad     []string
}

func (r *rig) guard(name, owner string) *guard {
	return &guard{r: r, name: name, owner: owner, started: make(chan time.Time, 1000)}
}

func (g *guard) task(during func(ctx context.Context)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		g.runs.Add(1)
		g.started <- time.Now()
		g.check("at start")
		if during != nil {
			during(ctx)
		}
		g.check("at end")
		return nil
	}
}

func (g *guard) check(when string) {
	owner, left := g.r.holder(g.name)
	if owner != g.owner {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.bad = append(g.bad, fmt.Sprintf("task ran without the lock %s: holder %q (left %v), want %q", when, owner, left, g.owner))
	}
}

func (g *guard) verify(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bad) > 0 {
		t.Errorf("%d checks found the task running without the lock; first: %s", len(g.bad), g.bad[0])
	}
}

// recorder keeps every log record, for asserting that errors were logged.
type recorder struct {
	mu   sync.Mutex
	recs []string
}

func (rc *recorder) logger() *slog.Logger { return slog.New(recordHandler{rc}) }

// count returns how many records at level or above contain substr.
func (rc *recorder) count(level slog.Level, substr string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, r := range rc.recs {
		lvl, msg, _ := strings.Cut(r, " ")
		var l slog.Level
		if l.UnmarshalText([]byte(lvl)) == nil && l >= level && strings.Contains(msg, substr) {
			n++
		}
	}
	return n
}

type recordHandler struct{ rc *recorder }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.rc.mu.Lock()
	defer h.rc.mu.Unlock()
	h.rc.recs = append(h.rc.recs, b.String())
	return nil
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// lockWithin polls TryLock until it succeeds and returns how long it took.
func lockWithin(t *testing.T, p shedlock.LockProvider, cfg shedlock.LockConfig, timeout time.Duration) (shedlock.Lock, time.Duration) {
	t.Helper()
	start := time.Now()
	var l shedlock.Lock
	waitFor(t, timeout, "lock "+cfg.Name, func() bool {
		var err error
		l, err = p.TryLock(context.Background(), cfg)
		if err != nil && !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Logf("TryLock while waiting: %v", err)
		}
		return err == nil
	})
	return l, time.Since(start)
}
