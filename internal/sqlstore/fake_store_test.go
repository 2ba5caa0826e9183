package sqlstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// fakeStore is a Store in memory that counts the statements sent. With upserts
// set, its Insert also takes a free existing row, as PostgreSQL's INSERT ... ON
// CONFLICT DO UPDATE does.
type fakeStore struct {
	mu      sync.Mutex
	rows    map[string]string // name -> token holding it; "" when free
	sent    int
	updates int
	upserts bool
	fence   int64 // the last fencing token given
	keyFunc func(string) string

	// batches: the names of each AcquireBatch, as sent; conflicts: how many
	// more AcquireBatch calls fail with ErrConflict; noBatch: every one fails
	// with ErrNoBatch. nameKeys counts NameKeys calls.
	batches   [][]string
	conflicts int
	busy      map[string]bool // rows another transaction holds: a batch with one waits out its lock wait
	pending   map[string]bool // rows another transaction is inserting: the same wait, but BusyRows cannot see them
	unread    bool            // AcquireBatch takes its rows, then fails with ErrUnread
	noBatch   bool
	nameKeys  int
	failing   map[string]error // names whose Insert fails with the error
	paused    map[string]bool  // names an operator paused: their existing rows are refused, Grant.Paused

	// admin: the one row "job", whose locked_by is "pod-<holder>"; it changes
	// hands before each of the first moves Clears.
	holder, moves, clears int
}

func newFakeStore() *fakeStore {
	return &fakeStore{rows: map[string]string{}, keyFunc: func(s string) string { return s }}
}

func (s *fakeStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *fakeStore) Caps() Caps    { return Caps{Upserts: s.upserts, TimeUnit: time.Millisecond} }
func (s *fakeStore) Table() string { return "shedlock" }

func (a Args) strings() (name, token string) { return a.Name.(string), a.Token.(string) }

func (s *fakeStore) Insert(_ context.Context, a Args, _ time.Duration) (Grant, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if err := s.failing[name]; err != nil {
		return Grant{}, err
	}
	if held, ok := s.rows[name]; ok && (!s.upserts || held != "" || s.paused[name]) {
		return Grant{Paused: s.upserts && s.paused[name]}, nil
	}
	s.rows[name] = token
	s.fence++
	return Grant{OK: true, Fence: s.fence}, nil
}

func (s *fakeStore) Update(_ context.Context, a Args, _ time.Duration) (Grant, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	s.updates++
	if held, ok := s.rows[name]; !ok || held != "" || s.paused[name] {
		return Grant{Paused: ok && s.paused[name]}, nil
	}
	s.rows[name] = token
	s.fence++
	return Grant{OK: true, Fence: s.fence}, nil
}

func (s *fakeStore) Release(_ context.Context, a Args, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if s.rows[name] != token {
		return false, nil
	}
	s.rows[name] = ""
	return true, nil
}

func (s *fakeStore) Extend(_ context.Context, a Args, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	return s.rows[name] == token, nil
}

func (s *fakeStore) NameKey(_ context.Context, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	return s.keyFunc(name), nil
}

func (s *fakeStore) NameKeys(_ context.Context, names []string) ([]string, []error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	s.nameKeys++
	keys, errs := make([]string, len(names)), make([]error, len(names))
	for i, n := range names {
		keys[i] = s.keyFunc(n)
		if strings.HasPrefix(n, "bad") {
			errs[i] = fmt.Errorf("%w: %q cannot be stored", lockerr.InvalidConfig, n)
		}
	}
	return keys, errs, nil
}

// AcquireBatch takes each free or missing row, as an upsert does.
func (s *fakeStore) AcquireBatch(_ context.Context, as []BatchArgs) ([]Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	switch {
	case s.noBatch:
		return nil, ErrNoBatch
	case s.conflicts > 0:
		s.conflicts--
		return nil, fmt.Errorf("deadlock: %w", ErrConflict)
	}
	for _, a := range as {
		if s.busy[a.Name] || s.pending[a.Name] {
			return nil, fmt.Errorf("lock wait timeout: %w", ErrLockWait)
		}
	}
	names := make([]string, len(as))
	grants := make([]Grant, len(as))
	for i, a := range as {
		names[i] = a.Name
		if _, ok := s.rows[a.Name]; ok && s.paused[a.Name] {
			grants[i].Paused = true
			continue
		}
		if s.rows[a.Name] != "" {
			continue
		}
		s.rows[a.Name] = a.Token
		s.fence++
		grants[i] = Grant{OK: true, Fence: s.fence}
	}
	s.batches = append(s.batches, names)
	if s.unread {
		return nil, fmt.Errorf("%w: connection lost", ErrUnread)
	}
	return grants, nil
}

// BusyRows reports the rows of as in busy.
func (s *fakeStore) BusyRows(_ context.Context, as []BatchArgs) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	busy := make([]bool, len(as))
	for i, a := range as {
		busy[i] = s.busy[a.Name]
	}
	return busy, nil
}

func (s *fakeStore) Ready(context.Context) error       { return nil }
func (s *fakeStore) Probe(context.Context) error       { return nil }
func (s *fakeStore) EnsureTable(context.Context) error { return nil }
func (s *fakeStore) Close() error                      { return nil }

func (s *fakeStore) LockRows(_ context.Context, name string) ([]Row, error) {
	if name != "job" {
		return nil, nil
	}
	by := "pod-" + string(rune('0'+s.holder))
	return []Row{{Info: Info{Name: "job", LockedBy: by, Held: true}, LockedAtKey: int64(s.holder)}}, nil
}

func (s *fakeStore) Clear(_ context.Context, r Row) (bool, error) {
	s.clears++
	if s.moves > 0 {
		s.moves--
		s.holder++
		return false, nil
	}
	return r.LockedAtKey == int64(s.holder), nil
}

func testEngine(t *testing.T, store Store) *Engine {
	t.Helper()
	return NewEngine(store, Config{
		LockedBy: "test#0000", Logger: slog.Default(), Retries: 3, Backoff: time.Millisecond,
		CheckDurations: func(string, time.Duration, time.Duration) error { return nil },
	})
}
