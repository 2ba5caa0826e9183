package shop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The article's lock names.
const (
	CancelJobName = "orderTimeoutCancelJob"
	OutboxJobName = "outboxPollingJob"
)

// OutboxBatch is how many PENDING events one outbox run reads (findPendingEvents(100)).
const OutboxBatch = 100

// errStaleVersion is an optimistic-lock failure: the inventory row changed
// between our read and our write.
var errStaleVersion = errors.New("shop: inventory version changed (optimistic lock)")

// Jobs are the two scheduled jobs of one pod.
type Jobs struct {
	DB  *DB
	Pod string
	// OrderTimeout is how long an order may wait for payment before it is cancelled.
	OrderTimeout time.Duration
	// Latency is the simulated cost of one unit of work: a broker
	// acknowledgement per published event, the domain logic per cancelled order.
	Latency time.Duration
	Log     *slog.Logger
}

type expiredOrder struct {
	id, product, quantity int64
	status                string
}

// CancelExpiredOrders is orderTimeoutCancelJob: find PAYMENT_REQUESTED orders
// older than the cut-off and cancel each in its own transaction. Like the
// article's job it checks the status it read when it listed the orders, and the
// orders table has no version: two runs at once cancel the same order twice
// unless the inventory's version stops the second.
func (j *Jobs) CancelExpiredOrders(ctx context.Context) error {
	return j.journal(ctx, CancelJobName, func(ctx context.Context) error {
		orders, err := j.findExpired(ctx)
		if err != nil {
			return err
		}
		for _, o := range orders {
			if err := ctx.Err(); err != nil {
				return err
			}
			if o.status != PaymentRequested { // Order.cancel()'s guard, on the listed entity
				continue
			}
			err := j.cancel(ctx, o)
			if errors.Is(err, errStaleVersion) {
				j.recordOptimisticFailure(ctx, o.id)
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (j *Jobs) findExpired(ctx context.Context) ([]expiredOrder, error) {
	rows, err := j.DB.QueryContext(ctx, "SELECT id, product_id, quantity, status FROM orders "+
		"WHERE status = ? AND ordered_at < "+j.DB.D.NowMinus+" ORDER BY ordered_at",
		PaymentRequested, j.OrderTimeout.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("shop: find expired orders: %w", err)
	}
	defer rows.Close()
	var out []expiredOrder
	for rows.Next() {
		var o expiredOrder
		if err := rows.Scan(&o.id, &o.product, &o.quantity, &o.status); err != nil {
			return nil, fmt.Errorf("shop: find expired orders: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// cancel cancels one order, restores its stock under the inventory's optimistic
// lock and writes order.cancelled to the outbox, all in one transaction.
func (j *Jobs) cancel(ctx context.Context, o expiredOrder) error {
	tx, err := j.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("shop: cancel order %d: %w", o.id, err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit

	var version int64
	if err := tx.QueryRowContext(ctx, "SELECT version FROM inventory WHERE product_id = ?", o.product).Scan(&version); err != nil {
		return fmt.Errorf("shop: cancel order %d: read inventory: %w", o.id, err)
	}
	if err := pause(ctx, j.Latency); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE orders SET status = ?, cancelled_at = "+j.DB.D.Now+" WHERE id = ?",
		Cancelled, o.id); err != nil {
		return fmt.Errorf("shop: cancel order %d: %w", o.id, err)
	}
	res, err := tx.ExecContext(ctx, "UPDATE inventory SET stock = stock + ?, version = version + 1 "+
		"WHERE product_id = ? AND version = ?", o.quantity, o.product, version)
	if err != nil {
		return fmt.Errorf("shop: cancel order %d: restore stock: %w", o.id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(errStaleVersion, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO outbox_events (aggregate_id, event_type, status, created_at) "+
		"VALUES (?, 'order.cancelled', ?, "+j.DB.D.Now+")", o.id, Pending); err != nil {
		return fmt.Errorf("shop: cancel order %d: outbox: %w", o.id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("shop: cancel order %d: commit: %w", o.id, err)
	}
	return nil
}

func (j *Jobs) recordOptimisticFailure(ctx context.Context, orderID int64) {
	j.Log.WarnContext(ctx, "optimistic lock failure; transaction rolled back", "order", orderID)
	if _, err := j.DB.ExecContext(ctx, "INSERT INTO optimistic_failures (pod, order_id, at) VALUES (?, ?, "+
		j.DB.D.Now+")", j.Pod, orderID); err != nil {
		j.Log.ErrorContext(ctx, "record optimistic failure", "error", err)
	}
}

// PollOutbox is outboxPollingJob: read up to OutboxBatch PENDING events, publish
// each to the topic, mark it PUBLISHED.
func (j *Jobs) PollOutbox(ctx context.Context) error {
	return j.journal(ctx, OutboxJobName, func(ctx context.Context) error {
		ids, err := j.pending(ctx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := pause(ctx, j.Latency); err != nil { // the broker's acknowledgement
				return err
			}
			if _, err := j.DB.ExecContext(ctx, "INSERT INTO topic (event_id, pod, published_at) VALUES (?, ?, "+
				j.DB.D.Now+")", id, j.Pod); err != nil {
				return fmt.Errorf("shop: publish event %d: %w", id, err)
			}
			if _, err := j.DB.ExecContext(ctx, "UPDATE outbox_events SET status = ?, published_at = "+
				j.DB.D.Now+" WHERE id = ?", Published, id); err != nil {
				return fmt.Errorf("shop: mark event %d published: %w", id, err)
			}
		}
		return nil
	})
}

func (j *Jobs) pending(ctx context.Context) ([]int64, error) {
	rows, err := j.DB.QueryContext(ctx, "SELECT id FROM outbox_events WHERE status = ? ORDER BY id LIMIT ?",
		Pending, OutboxBatch)
	if err != nil {
		return nil, fmt.Errorf("shop: read outbox: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("shop: read outbox: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// pause stands for work that takes time (a network call); it ends early with ctx.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
