package integration_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// openSQLite opens a pool of its own on file, as a separate process would.
func openSQLite(t testing.TB, file, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?"+params)
	if err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newSQLiteProvider(t testing.TB, db *sql.DB, opts ...shedlock.ProviderOption) *shedlock.SQLiteProvider {
	t.Helper()
	p, err := shedlock.NewSQLiteProvider(db, opts...)
	if err != nil {
		t.Fatalf("NewSQLiteProvider: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// sqliteStore makes providers on a fresh database file, each with its own pool
// opened with shedlock.SQLiteDSNParams.
func sqliteStore(opts ...shedlock.ProviderOption) shedlocktest.NewStoreFunc {
	return sqliteStoreWith(shedlock.SQLiteDSNParams, opts...)
}

// sqliteStoreWith is sqliteStore with the file's DSN parameters.
func sqliteStoreWith(params string, opts ...shedlock.ProviderOption) shedlocktest.NewStoreFunc {
	return func(t *testing.T) shedlocktest.NewProviderFunc {
		file := filepath.Join(t.TempDir(), "locks.db")
		if err := newSQLiteProvider(t, openSQLite(t, file, params), opts...).
			EnsureTable(context.Background()); err != nil {
			t.Fatal(err)
		}
		return func(t *testing.T) shedlock.LockProvider {
			return newSQLiteProvider(t, openSQLite(t, file, params), opts...)
		}
	}
}

func TestSQLiteProvider(t *testing.T) {
	t.Parallel()
	shedlocktest.Run(t, sqliteStore())
}

func TestSQLiteProviderRejectsBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := shedlock.NewSQLiteProvider(nil); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("nil db: want ErrInvalidOption, got %v", err)
	}
	db := openSQLite(t, filepath.Join(t.TempDir(), "x.db"), "")
	for _, name := range []string{"", "lock; DROP TABLE x", `a"b`, "a.b.c", "1abc"} {
		if _, err := shedlock.NewSQLiteProvider(db, shedlock.WithTableName(name)); !errors.Is(err, shedlock.ErrInvalidOption) {
			t.Errorf("WithTableName(%q): want ErrInvalidOption, got %v", name, err)
		}
	}
}

// The row holds the database's UTC time in the fixed-width form the string
// comparisons rely on, and locked_by is the provider's owner.
func TestSQLiteProviderStoresDatabaseTime(t *testing.T) {
	t.Parallel()
	db := openSQLite(t, filepath.Join(t.TempDir(), "x.db"), shedlock.SQLiteDSNParams)
	p := newSQLiteProvider(t, db, shedlock.WithTableName("main.my_locks"))
	ctx := context.Background()
	if err := p.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.EnsureTable(ctx); err != nil {
		t.Fatalf("second EnsureTable: %v", err)
	}
	before := time.Now().UTC().Add(-time.Second)
	if _, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	var until, at, by string
	if err := db.QueryRow(`SELECT lock_until, locked_at, locked_by FROM my_locks WHERE name = 'job'`).Scan(&until, &at, &by); err != nil {
		t.Fatal(err)
	}
	u, err1 := time.Parse("2006-01-02 15:04:05.000", until)
	a, err2 := time.Parse("2006-01-02 15:04:05.000", at)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("stored times not in the fixed layout: %v", err)
	}
	if a.Before(before) || a.After(time.Now().UTC().Add(time.Second)) {
		t.Errorf("locked_at %s is not the current UTC time", at)
	}
	if d := u.Sub(a); d != 10*time.Minute {
		t.Errorf("lock_until - locked_at = %v, want 10m", d)
	}
	if !strings.HasPrefix(by, p.LockedBy()+".") {
		t.Errorf("locked_by = %q, want %q and the acquisition's number", by, p.LockedBy())
	}
}

// A database held by another writer beyond the busy timeout is an error from
// TryLock, not ErrNotAcquired and not a lock; once the writer is gone the lock is
// free.
func TestSQLiteProviderBusyIsAnErrorNotALock(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "x.db")
	ctx := context.Background()
	setup := newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams))
	if err := setup.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	blocker := openSQLite(t, file, shedlock.SQLiteDSNParams)
	tx, err := blocker.BeginTx(ctx, nil) // _txlock=immediate: holds the write lock now
	if err != nil {
		t.Fatal(err)
	}
	p := newSQLiteProvider(t, openSQLite(t, file, "_pragma=busy_timeout(50)&_pragma=journal_mode(WAL)"))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := p.TryLock(ctx, cfg)
	if l != nil || err == nil || errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock on a busy database: want an error, got lock=%v err=%v", l != nil, err)
	}
	if !strings.Contains(err.Error(), "shedlock: acquire") {
		t.Errorf("error %q lacks the shedlock prefix", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TryLock(ctx, cfg); err != nil {
		t.Fatalf("TryLock after the writer left: %v", err)
	}
}

// A pool opened without the pragmas gets one warning, naming the fix.
func TestSQLiteProviderWarnsAboutPoolSettings(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	db := openSQLite(t, filepath.Join(t.TempDir(), "x.db"), "")
	p := newSQLiteProvider(t, db, shedlock.WithLogger(log))
	if err := p.EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "SQLiteDSNParams"); n != 1 {
		t.Errorf("want one warning naming SQLiteDSNParams, got %d in %q", n, buf.String())
	}

	buf.Reset()
	good := newSQLiteProvider(t, openSQLite(t, filepath.Join(t.TempDir(), "y.db"), shedlock.SQLiteDSNParams), shedlock.WithLogger(log))
	if err := good.EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := good.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("warning with the recommended DSN: %q", buf.String())
	}
}

// The statements are prepared on first use: a failed prepare (no table yet) is
// an error, not a lock, and is tried again; Close drops them and the next
// attempt prepares them anew. A release keeps the lock to the millisecond of
// LockAtLeastFor.
func TestSQLiteProviderPreparesOnFirstUse(t *testing.T) {
	t.Parallel()
	db := openSQLite(t, filepath.Join(t.TempDir(), "x.db"), shedlock.SQLiteDSNParams)
	p := newSQLiteProvider(t, db)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 1234 * time.Millisecond}
	if _, err := p.TryLock(ctx, cfg); err == nil || errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock without a table: want a prepare error, got %v", err)
	}
	if err := p.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := p.TryLock(ctx, cfg)
	if err != nil {
		t.Fatalf("TryLock after EnsureTable: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var until, at string
	if err := db.QueryRow(`SELECT lock_until, locked_at FROM shedlock WHERE name = 'job'`).Scan(&until, &at); err != nil {
		t.Fatal(err)
	}
	u, err1 := time.Parse("2006-01-02 15:04:05.000", until)
	a, err2 := time.Parse("2006-01-02 15:04:05.000", at)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if d := u.Sub(a); d != cfg.LockAtLeastFor {
		t.Errorf("after Unlock, lock_until - locked_at = %v, want %v", d, cfg.LockAtLeastFor)
	}
	if err := errors.Join(p.Close(), p.Close()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	cfg.Name, cfg.LockAtLeastFor = "other", 0
	l, err = p.TryLock(ctx, cfg)
	if err != nil {
		t.Fatalf("TryLock after Close: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
