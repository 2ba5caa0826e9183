package shop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Generate creates an order (with its order.created event) every interval until
// ctx ends, and returns how many it created. A failed insert is returned at once.
func (db *DB) Generate(ctx context.Context, every time.Duration) (int, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, nil
		case <-t.C:
		}
		if err := db.CreateOrder(ctx, rand.Int64N(Products)+1, rand.Int64N(3)+1); err != nil {
			if ctx.Err() != nil {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// CreateOrder inserts a PAYMENT_REQUESTED order and its order.created event.
func (db *DB) CreateOrder(ctx context.Context, product, quantity int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("shop: create order: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	id, err := insert(ctx, db.D, tx, "INSERT INTO orders (product_id, quantity, status, ordered_at) VALUES (?, ?, ?, "+
		db.D.Now+")", product, quantity, PaymentRequested)
	if err != nil {
		return fmt.Errorf("shop: create order: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO outbox_events (aggregate_id, event_type, status, created_at) "+
		"VALUES (?, 'order.created', ?, "+db.D.Now+")", id, Pending); err != nil {
		return fmt.Errorf("shop: create order: outbox: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("shop: create order: commit: %w", err)
	}
	return nil
}
