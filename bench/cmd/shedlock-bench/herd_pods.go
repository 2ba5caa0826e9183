package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/bench/floor"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// openPool opens a pod's pool of spec.Pool connections, kept open: a pod in
// steady state does not reconnect.
func openPool(driver string, spec podSpec) (*sql.DB, error) {
	db, err := sql.Open(driver, spec.DSN)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(spec.Pool)
	db.SetMaxIdleConns(spec.Pool)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// openMySQLPod: MySQLProvider, and the upsert and release prepared on the same
// pool, as the provider prepares them.
func openMySQLPod(ctx context.Context, p *herdPod) error {
	db, err := openPool("mysql", p.spec)
	if err != nil {
		return err
	}
	prov, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(p.spec.Table))
	if err != nil {
		return errors.Join(err, db.Close())
	}
	pin := func(stmt string) string { return floor.MySQL(stmt, p.spec.Table, p.spec.Version) }
	acq, err := db.PrepareContext(ctx, pin(floor.MySQLAcquire))
	if err != nil {
		return errors.Join(err, db.Close())
	}
	rel, err := db.PrepareContext(ctx, pin(floor.MySQLRelease))
	if err != nil {
		return errors.Join(err, db.Close())
	}
	most, least := p.spec.Most.Microseconds(), p.spec.Least.Microseconds()
	p.provider = prov
	p.floorAcquire = func(ctx context.Context, name, token string) (bool, error) {
		return changed(acq.ExecContext(ctx, name, most, token, token, most))
	}
	p.floorRelease = func(ctx context.Context, name, token string) error {
		_, err := rel.ExecContext(ctx, least, least, name, token)
		return err
	}
	p.conns = func() int { return db.Stats().OpenConnections }
	p.close = func() error { return errors.Join(prov.Close(), db.Close()) }
	return nil
}

// openPostgresPod: PostgresProvider on pgx, and the upsert and release sent as
// texts on the same pool: pgx prepares and caches them per connection, as it
// does the provider's.
func openPostgresPod(_ context.Context, p *herdPod) error {
	db, err := openPool("pgx", p.spec)
	if err != nil {
		return err
	}
	prov, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName(p.spec.Table))
	if err != nil {
		return errors.Join(err, db.Close())
	}
	acq, rel := floor.Postgres(floor.PostgresAcquire, p.spec.Table), floor.Postgres(floor.PostgresRelease, p.spec.Table)
	returning := acq // read through database/sql's Rows, as the provider reads its proof
	if !strings.Contains(acq, "RETURNING") {
		returning += " RETURNING tableoid::int8, locked_by::text"
	}
	most, least := p.spec.Most.Milliseconds(), p.spec.Least.Milliseconds()
	p.provider = prov
	p.floorAcquire = func(ctx context.Context, name, token string) (bool, error) {
		if slices.Contains(p.spec.FloorAs, "returning") {
			return returnsRow(db.QueryContext(ctx, returning, name, most, token))
		}
		return changed(db.ExecContext(ctx, acq, name, most, token))
	}
	p.floorRelease = func(ctx context.Context, name, token string) error {
		_, err := db.ExecContext(ctx, rel, least, name, token)
		return err
	}
	p.conns = func() int { return db.Stats().OpenConnections }
	p.close = func() error { return errors.Join(prov.Close(), db.Close()) }
	return nil
}

// openRedisPod: the Redis provider, and its acquire script (SET NX PX and the
// fencing token) and release script sent directly through the same client.
func openRedisPod(_ context.Context, p *herdPod) error {
	c := redis.NewClient(&redis.Options{Addr: p.spec.DSN, PoolSize: p.spec.Pool, MaxActiveConns: p.spec.Pool,
		ContextTimeoutEnabled: true})
	prov, err := shedlockredis.NewProvider(c, shedlockredis.WithEnv(p.spec.Table))
	if err != nil {
		return errors.Join(err, c.Close())
	}
	acquire, release := redis.NewScript(shedlockredis.LuaScripts().Acquire), redis.NewScript(shedlockredis.LuaScripts().Release)
	most, least := p.spec.Most.Milliseconds(), p.spec.Least.Milliseconds()
	p.provider = prov
	p.floorAcquire = func(ctx context.Context, name, token string) (bool, error) {
		key := prov.Key(name)
		err := acquire.Run(ctx, c, []string{key, shedlockredis.FenceKey(key)}, token, most).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}
	p.floorRelease = func(ctx context.Context, name, token string) error {
		n, err := release.Run(ctx, c, []string{prov.Key(name)}, token, least, most).Int64()
		if err == nil && n != 1 {
			err = fmt.Errorf("floor release of %s: not ours", name)
		}
		return err
	}
	p.conns = func() int { return int(c.PoolStats().TotalConns) }
	p.close = c.Close
	return nil
}

// returnsRow reports whether a query returned a row.
func returnsRow(rows *sql.Rows, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	ok := rows.Next()
	return ok, errors.Join(rows.Err(), rows.Close())
}

// changed reports whether a statement changed a row: 1 or 2 (MySQL's count for
// an upsert that changed an existing row).
func changed(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// floorAs wraps a floor's acquire to send it as the provider does, in the ways
// listed: "deadline", under a context with a deadline (the executor's acquire
// timeout); "goroutine", from a goroutine of its own whose result the caller
// waits for (the engine's bound on every statement). "returning" (PostgreSQL:
// the row taken, read with QueryRow) is the store's own.
func floorAs(ways []string, acquire func(context.Context, string, string) (bool, error)) func(context.Context, string, string) (bool, error) {
	if slices.Contains(ways, "goroutine") {
		inner := acquire
		acquire = func(ctx context.Context, name, token string) (bool, error) {
			type result struct {
				ok  bool
				err error
			}
			done := make(chan result, 1)
			go func() {
				ok, err := inner(ctx, name, token)
				done <- result{ok, err}
			}()
			select {
			case r := <-done:
				return r.ok, r.err
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
	}
	if slices.Contains(ways, "deadline") {
		inner := acquire
		acquire = func(ctx context.Context, name, token string) (bool, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return inner(ctx, name, token)
		}
	}
	return acquire
}
