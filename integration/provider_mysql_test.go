package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// mysqlStore makes providers, each with its own pool, on a fresh table. zones,
// if given, are the session time zones the pools take in turn.
func mysqlStore(zones []string, opts ...shedlock.ProviderOption) shedlocktest.NewStoreFunc {
	return func(t *testing.T) shedlocktest.NewProviderFunc {
		table := testdb.NewTable(t, testdb.Open(t, nil))
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			var params map[string]string
			if len(zones) > 0 {
				params = map[string]string{"time_zone": "'" + zones[n%len(zones)] + "'"}
			}
			n++
			return newMySQLProvider(t, testdb.Open(t, params), append(opts, shedlock.WithTableName(table))...)
		}
	}
}

func newMySQLProvider(t *testing.T, db *sql.DB, opts ...shedlock.ProviderOption) *shedlock.MySQLProvider {
	t.Helper()
	p, err := shedlock.NewMySQLProvider(db, opts...)
	if err != nil {
		t.Fatalf("NewMySQLProvider: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestMySQLProvider(t *testing.T) {
	t.Parallel()
	shedlocktest.Run(t, mysqlStore(nil))
}

// Pools whose sessions are in different zones take turns as providers: every
// behaviour must hold across them.
func TestMySQLProviderMixedTimeZones(t *testing.T) {
	t.Parallel()
	shedlocktest.Run(t, mysqlStore(testZones(t)))
}

// testZones returns fixed-offset zones, and a named zone with daylight saving
// time when the server has its time zone tables loaded.
func testZones(t *testing.T) []string {
	zones := []string{"+09:00", "+00:00", "-05:00"}
	var n int
	db := testdb.Open(t, nil)
	if err := db.QueryRow("SELECT COUNT(*) FROM mysql.time_zone_name WHERE name = 'America/New_York'").Scan(&n); err == nil && n > 0 {
		zones = append(zones, "America/New_York")
	} else {
		t.Logf("server has no time zone tables: testing fixed offsets only (load them with mysql_tzinfo_to_sql)")
	}
	return zones
}

// The trap of DESIGN.md: a +09:00 pod's 10-minute lock must not look expired to
// a +00:00 pod, and the stored lock_until must be 10 minutes ahead in real time.
func TestMySQLTimeZoneLockNotStolen(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	tokyo := newMySQLProvider(t, testdb.Open(t, map[string]string{"time_zone": "'+09:00'"}), shedlock.WithTableName(table))
	utc := newMySQLProvider(t, testdb.Open(t, map[string]string{"time_zone": "'+00:00'"}), shedlock.WithTableName(table))
	cfg := shedlock.LockConfig{Name: "orderTimeoutCancelJob", LockAtMostFor: 10 * time.Minute, LockAtLeastFor: 30 * time.Second}
	if _, err := tokyo.TryLock(context.Background(), cfg); err != nil {
		t.Fatalf("+09:00 pod: %v", err)
	}
	if _, err := utc.TryLock(context.Background(), cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("+00:00 pod: want ErrNotAcquired, got %v", err)
	}
	var ahead float64
	q := "SELECT UNIX_TIMESTAMP(lock_until) - UNIX_TIMESTAMP(NOW(3)) FROM " + table + " WHERE name = ?"
	if err := admin.QueryRow(q, cfg.Name).Scan(&ahead); err != nil {
		t.Fatal(err)
	}
	if ahead < 595 || ahead > 601 {
		t.Fatalf("lock_until is %.1fs ahead of now, want about 600s", ahead)
	}
}

// A row deleted by hand is re-created within one LockAtMostFor.
func TestMySQLDeletedRowRecreated(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	const most = 500 * time.Millisecond
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: most}
	l, err := p.TryLock(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("DELETE FROM "+table+" WHERE name = ?", cfg.Name); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		l, err = p.TryLock(context.Background(), cfg)
		if err == nil {
			break
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Fatal(err)
		}
		if time.Since(start) > most+time.Second {
			t.Fatalf("deleted row not re-created within LockAtMostFor (%v): job wedged", most)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE name = ?", cfg.Name).Scan(&n); err != nil || n != 1 {
		t.Fatalf("row count %d, err %v: want the row back", n, err)
	}
	_ = l.Unlock(context.Background())
}

func TestMySQLBadInput(t *testing.T) {
	t.Parallel()
	if _, err := shedlock.NewMySQLProvider(nil); !errors.Is(err, shedlock.ErrInvalidOption) || !strings.Contains(err.Error(), "nil *sql.DB") {
		t.Errorf("nil db: got %v", err)
	}
	// A pool on a port nothing listens on: any statement sent would fail with a
	// connection error, so ErrInvalid... proves none was sent.
	dead, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/test?timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	for _, name := range []string{"", "lock; DROP TABLE x", "1abc", "a.b.c", "`x`", "a-b", strings.Repeat("t", 65), "db."} {
		if _, err := shedlock.NewMySQLProvider(dead, shedlock.WithTableName(name)); !errors.Is(err, shedlock.ErrInvalidOption) ||
			!strings.Contains(err.Error(), "WithTableName") {
			t.Errorf("WithTableName(%q): want ErrInvalidOption, got %v", name, err)
		}
	}
	if _, err := shedlock.NewMySQLProvider(dead, shedlock.WithLockedBy(strings.Repeat("o", 256))); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("WithLockedBy(256 bytes): got %v", err)
	}
	if _, err := shedlock.NewMySQLProvider(dead, shedlock.WithTableName("app.shedlock")); err != nil {
		t.Errorf("schema-qualified table: %v", err)
	}

	p := newMySQLProvider(t, dead)
	past2038 := time.Until(time.Date(2038, 1, 19, 0, 0, 0, 0, time.UTC))
	for _, c := range []shedlock.LockConfig{
		{Name: "job", LockAtMostFor: past2038},
		{Name: "job", LockAtMostFor: 100 * 365 * 24 * time.Hour},
		{Name: "", LockAtMostFor: time.Minute},
		{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: time.Hour},
	} {
		_, err := p.TryLock(context.Background(), c)
		if !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("TryLock(%+v): want ErrInvalidConfig before any statement, got %v", c, err)
		}
	}
	if _, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: past2038}); err == nil ||
		!strings.Contains(err.Error(), `lock "job": LockAtMostFor`) || !strings.Contains(err.Error(), "2038-01-19") {
		t.Errorf("past 2038: message should name the lock, the field and the limit: %v", err)
	}
	// A good config on the dead pool does reach the network: the check above is real.
	if _, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}); err == nil ||
		errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("good config on a dead pool: want a connection error, got %v", err)
	}
}

// A LockAtMostFor past 2038 is refused on Extend too, and the lock is kept.
func TestMySQLExtendPast2038Rejected(t *testing.T) {
	t.Parallel()
	table := testdb.NewTable(t, testdb.Open(t, nil))
	p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	q := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := p.TryLock(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(context.Background(), 100*365*24*time.Hour, 0); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Fatalf("Extend past 2038: want ErrInvalidConfig, got %v", err)
	}
	if _, err := q.TryLock(context.Background(), cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("after a rejected Extend the lock must still be held: %v", err)
	}
}

func TestMySQLEnsureTable(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, nil)
	table := "shedlock_ensure_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	for range 2 { // idempotent
		if err := p.EnsureTable(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// Two providers on one host never share an owner.
func TestMySQLDefaultOwnersUnique(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, nil)
	a, b := newMySQLProvider(t, db), newMySQLProvider(t, db)
	if a.LockedBy() == b.LockedBy() || a.LockedBy() == "" {
		t.Fatalf("owners %q and %q: want distinct", a.LockedBy(), b.LockedBy())
	}
}
