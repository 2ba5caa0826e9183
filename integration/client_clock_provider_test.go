package integration_test

import (
	"context"
	"database/sql"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock"
)

// clientClockProvider compares lock times with its own clock instead of the
// database's, as a library that trusts pod clocks would. It exists only to show
// what database time prevents (TestMySQLClockSkew); it is the MySQL provider's
// algorithm with every "now" read from the pod, whose clock is skew ahead.
type clientClockProvider struct {
	db    *sql.DB
	table string
	owner string
	skew  time.Duration
	n     atomic.Uint64
}

func newClientClockProvider(db *sql.DB, table, owner string, skew time.Duration) *clientClockProvider {
	return &clientClockProvider{db: db, table: "`" + table + "`", owner: owner, skew: skew}
}

func (p *clientClockProvider) now() time.Time { return time.Now().Add(p.skew).UTC() }

func (p *clientClockProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	now := p.now()
	token := p.owner + "." + strconv.FormatUint(p.n.Add(1), 10)
	until := now.Add(cfg.LockAtMostFor)
	res, err := p.db.ExecContext(ctx, "SET STATEMENT time_zone = '+00:00' FOR INSERT IGNORE INTO "+p.table+
		" (name, lock_until, locked_at, locked_by) VALUES (?, ?, ?, ?)", cfg.Name, until, now, token)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		res, err = p.db.ExecContext(ctx, "SET STATEMENT time_zone = '+00:00' FOR UPDATE "+p.table+
			" SET lock_until = ?, locked_at = ?, locked_by = ? WHERE name = ? AND lock_until <= ?",
			until, now, token, cfg.Name, now)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, shedlock.ErrNotAcquired
		}
	}
	return &clientClockLock{p: p, name: cfg.Name, token: token, lockedAt: now, least: cfg.LockAtLeastFor}, nil
}

type clientClockLock struct {
	p           *clientClockProvider
	name, token string
	lockedAt    time.Time
	least       time.Duration
}

func (l *clientClockLock) Unlock(ctx context.Context) error {
	until := l.lockedAt.Add(l.least)
	if now := l.p.now(); now.After(until) {
		until = now
	}
	_, err := l.p.db.ExecContext(ctx, "SET STATEMENT time_zone = '+00:00' FOR UPDATE "+l.p.table+
		" SET lock_until = ? WHERE name = ? AND locked_by = ?", until, l.name, l.token)
	return err
}

func (l *clientClockLock) Extend(context.Context, time.Duration, time.Duration) error {
	return shedlock.ErrLockLost // not needed to show the hazard
}
