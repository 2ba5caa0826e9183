package shop

import (
	"context"
	"fmt"
	"strings"
)

// Order and event states, as in the article.
const (
	PaymentRequested = "PAYMENT_REQUESTED"
	Cancelled        = "CANCELLED"
	Pending          = "PENDING"
	Published        = "PUBLISHED"
)

// Products is how many inventory rows Setup seeds; orders pick among them.
const Products = 5

var ddl = []string{
	`CREATE TABLE IF NOT EXISTS orders (
  id {id}, product_id INT NOT NULL, quantity INT NOT NULL,
  status VARCHAR(32) NOT NULL, ordered_at {time} NOT NULL, cancelled_at {time} NULL{orders_index})`,
	`CREATE TABLE IF NOT EXISTS inventory (
  product_id INT NOT NULL PRIMARY KEY, stock INT NOT NULL, version INT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS outbox_events (
  id {id}, aggregate_id BIGINT NOT NULL, event_type VARCHAR(64) NOT NULL,
  status VARCHAR(32) NOT NULL, created_at {time} NOT NULL, published_at {time} NULL)`,
	// The topic: one row per publish, so a duplicate publish is a second row.
	`CREATE TABLE IF NOT EXISTS topic (
  id {id}, event_id BIGINT NOT NULL, pod VARCHAR(64) NOT NULL, published_at {time} NOT NULL)`,
	// The journal: one row per run, from the database clock.
	`CREATE TABLE IF NOT EXISTS job_runs (
  id {id}, job VARCHAR(64) NOT NULL, pod VARCHAR(64) NOT NULL,
  started_at {time} NOT NULL, finished_at {time} NULL)`,
	`CREATE TABLE IF NOT EXISTS optimistic_failures (
  id {id}, pod VARCHAR(64) NOT NULL, order_id BIGINT NOT NULL, at {time} NOT NULL)`,
}

// Setup creates the tables if they do not exist and seeds the inventory. It is
// idempotent, so every pod may run it at start.
func (db *DB) Setup(ctx context.Context) error {
	unlock, err := db.setupTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	r := strings.NewReplacer("{id}", db.D.ID, "{time}", db.D.Time, "{orders_index}", db.D.OrdersIndex)
	stmts := make([]string, 0, len(ddl)+1)
	for _, s := range ddl {
		stmts = append(stmts, r.Replace(s))
	}
	if db.D.AfterCreate != "" {
		stmts = append(stmts, db.D.AfterCreate)
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("shop: setup: %w", err)
		}
	}
	for p := 1; p <= Products; p++ {
		if _, err := db.ExecContext(ctx, db.D.InsertIgnore+
			" INTO inventory (product_id, stock, version) VALUES (?, 1000, 0)"+db.D.IgnoreEnd, p); err != nil {
			return fmt.Errorf("shop: seed inventory: %w", err)
		}
	}
	return nil
}

// setupTurn waits until no other process is creating tables in this database,
// and returns the function that lets the next one in. On PostgreSQL two CREATE
// TABLE IF NOT EXISTS of one table at once can both try to create it, and one
// fails (SQLSTATE 23505 on pg_type): pods that start together take turns, by a
// session advisory lock. Elsewhere IF NOT EXISTS suffices.
func (db *DB) setupTurn(ctx context.Context) (unlock func(), err error) {
	if db.D.Name != Postgres {
		return func() {}, nil
	}
	conn, err := db.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("shop: setup: %w", err)
	}
	const key = "hashtext('shop.setup')"
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock("+key+")"); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("shop: setup: %w", err)
	}
	return func() {
		// Closing the session would release the lock too; unlocking first keeps
		// the connection for the pool.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock("+key+")")
		_ = conn.Close()
	}, nil
}
