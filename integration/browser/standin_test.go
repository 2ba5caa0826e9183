package browser

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock"
)

// The SQLite provider does not keep pauses and run-nows yet on this branch
// (shedlock.Controller and shedlock.RunRequester): until it does, sqlStandIn
// keeps them in a table of their own beside the lock table, in the same file,
// so that every pod process sees them, and refuses a paused job's TryLock
// before the provider's. It is a stand-in for the test only: the real store
// decides a pause inside its acquiring statement. Where the provider is a
// Controller already, controlled returns it as it is. Delete this once the
// SQL stores keep them.

// store is what the test and the pods use: the locks, the operator's view,
// pauses and run-nows.
type store interface {
	shedlock.LockProvider
	shedlock.Admin
	shedlock.Controller
	shedlock.RunRequester
}

// controlled returns p with pauses and run-nows: p itself where it keeps
// them, else p behind the stand-in on db.
func controlled(ctx context.Context, db *sql.DB, p *shedlock.SQLiteProvider) (store, error) {
	if s, ok := any(p).(store); ok {
		return s, nil
	}
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS test_control (
		name TEXT PRIMARY KEY, paused INTEGER NOT NULL DEFAULT 0,
		paused_until INTEGER NOT NULL DEFAULT 0, run_requests INTEGER NOT NULL DEFAULT 0)`)
	if err != nil {
		return nil, fmt.Errorf("the stand-in's table: %w", err)
	}
	return sqlStandIn{Admin: p, p: p, db: db}, nil
}

// sqlStandIn is the provider's Admin and TryLock, nothing more: the
// executor's batched and fire-time acquisitions, which would pass by the
// pause, are not offered.
type sqlStandIn struct {
	shedlock.Admin
	p  *shedlock.SQLiteProvider
	db *sql.DB
}

func nowMS() int64 { return time.Now().UnixMilli() }

func (s sqlStandIn) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	var paused int
	err := s.db.QueryRowContext(ctx, `SELECT paused FROM test_control WHERE name = ?
		AND paused = 1 AND (paused_until = 0 OR paused_until > ?)`, cfg.Name, nowMS()).Scan(&paused)
	switch {
	case err == nil:
		return nil, shedlock.ErrPaused
	case err != sql.ErrNoRows:
		return nil, err
	}
	return s.p.TryLock(ctx, cfg)
}

func (s sqlStandIn) Pause(ctx context.Context, name string, until time.Time) error {
	var ms int64
	if !until.IsZero() {
		ms = until.UnixMilli()
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO test_control (name, paused, paused_until) VALUES (?, 1, ?)
		ON CONFLICT (name) DO UPDATE SET paused = 1, paused_until = excluded.paused_until`, name, ms)
	return err
}

func (s sqlStandIn) Resume(ctx context.Context, name string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE test_control SET paused = 0, paused_until = 0 WHERE name = ?`, name)
	return err
}

func (s sqlStandIn) RunNow(ctx context.Context, name string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO test_control (name, run_requests) VALUES (?, 1)
		ON CONFLICT (name) DO UPDATE SET run_requests = run_requests + 1 RETURNING run_requests`, name).Scan(&n)
	return n, err
}

func (s sqlStandIn) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	if len(names) == 0 {
		return map[string]int64{}, nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := s.db.QueryContext(ctx, `SELECT name, run_requests FROM test_control WHERE run_requests > 0
		AND name IN (?`+strings.Repeat(", ?", len(names)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

func (s sqlStandIn) RunDone(ctx context.Context, name string, _ shedlock.Lock) error {
	_, err := s.db.ExecContext(ctx, `UPDATE test_control SET run_requests = run_requests - 1
		WHERE name = ? AND run_requests > 0`, name)
	return err
}

// controls reads every job's pause and run-nows.
func (s sqlStandIn) controls(ctx context.Context) (map[string]shedlock.Control, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, paused, paused_until, run_requests FROM test_control`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]shedlock.Control{}
	now := nowMS()
	for rows.Next() {
		var name string
		var paused int
		var until, n int64
		if err := rows.Scan(&name, &paused, &until, &n); err != nil {
			return nil, err
		}
		c := shedlock.Control{RunRequests: n}
		if paused == 1 && (until == 0 || until > now) {
			c.Paused = true
			if until != 0 {
				c.PausedUntil = time.UnixMilli(until).UTC()
			}
		}
		out[name] = c
	}
	return out, rows.Err()
}

func (s sqlStandIn) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	locks, err := s.Admin.Locks(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := s.controls(ctx)
	if err != nil {
		return nil, err
	}
	for i := range locks {
		locks[i].Control = cs[locks[i].Name]
	}
	return locks, nil
}

func (s sqlStandIn) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	l, err := s.Admin.Inspect(ctx, name)
	if err != nil {
		return l, err
	}
	cs, err := s.controls(ctx)
	l.Control = cs[name]
	return l, err
}
