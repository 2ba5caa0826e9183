package shedlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// pgxError has the method pgx's *pgconn.PgError and lib/pq's *pq.Error
// (1.10.8 on) share.
type pgxError struct{ code string }

func (e *pgxError) Error() string    { return "ERROR: " + e.code }
func (e *pgxError) SQLState() string { return e.code }

// ErrorCode and oldPQError are lib/pq's error before 1.10.8: a Code field of
// type ErrorCode, no method.
type ErrorCode string

type oldPQError struct {
	Severity string
	Code     ErrorCode
}

func (e oldPQError) Error() string { return "pq: " + string(e.Code) }

// otherError has a Code field of another type: not read as a SQLSTATE.
type otherError struct{ Code string }

func (e *otherError) Error() string { return e.Code }

func TestSQLState(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&pgxError{"40001"}, "40001"},
		{fmt.Errorf("acquire: %w", &pgxError{"25006"}), "25006"},
		{&oldPQError{Code: "40001"}, "40001"},
		{oldPQError{Code: "40001"}, "40001"},
		{fmt.Errorf("acquire: %w", &oldPQError{Code: "25006"}), "25006"},
		{&otherError{"40001"}, ""},
		{errors.New("40001"), ""},
		{nil, ""},
	} {
		if got := sqlState(tc.err); got != tc.want {
			t.Errorf("sqlState(%#v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// upsertingStore is a countingStore whose insert takes a free existing row,
// as PostgreSQL's INSERT ... ON CONFLICT DO UPDATE does.
type upsertingStore struct {
	*countingStore
	updates int
}

func (s *upsertingStore) upserts() {}

func (s *upsertingStore) insert(_ context.Context, a sqlArgs, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if s.rows[name] != "" {
		return false, nil
	}
	s.rows[name] = token
	return true, nil
}

func (s *upsertingStore) update(ctx context.Context, a sqlArgs, most time.Duration) (bool, error) {
	s.updates++
	return s.countingStore.update(ctx, a, most)
}

// With an upserting store a name's first acquisition is one statement, taken
// or not: a held lock costs no UPDATE after the INSERT.
func TestUpsertStoreFirstUseIsOneStatement(t *testing.T) {
	ctx := context.Background()
	store := &upsertingStore{countingStore: newCountingStore()}
	holder, other := testEngine(t, store), testEngine(t, store)
	cfg := LockConfig{Name: "job", LockAtMostFor: time.Hour}
	l, err := holder.tryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := store.count()
	if _, err := other.tryLock(ctx, cfg); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("held lock: want ErrNotAcquired, got %v", err)
	}
	if n := store.count() - before; n != 2 || store.updates != 0 {
		t.Fatalf("first attempt on a held name sent %d statements (%d UPDATEs), want 2: the name check and the upsert", n, store.updates)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.tryLock(ctx, cfg); err != nil {
		t.Fatalf("released lock: %v", err)
	}
}
