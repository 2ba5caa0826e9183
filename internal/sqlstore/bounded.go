package sqlstore

import "context"

// bounded runs a statement, but returns when ctx ends even if the statement has
// not: database/sql waits for its driver, and a driver that does not honour ctx
// (lib/pq blocked reading a dead connection) would hold the caller past every
// bound it set. The statement goes on in its goroutine and its result is
// dropped: an abandoned release leaves the lock until its lock_until, an
// abandoned acquisition that lands later holds a lock no one runs under until
// its LockAtMostFor. Neither breaks exclusion.
func bounded[T any](ctx context.Context, stmt func(context.Context) (T, error)) (T, error) {
	if ctx.Done() == nil {
		return stmt(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := stmt(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// statement runs one of the lock's own statements: in the caller's goroutine
// when the driver ends a statement when its context ends (Config.HonoursContext),
// else bounded. In a herd, the goroutine bounded starts and the two wake-ups it
// costs are paid on every attempt by every pod.
func statement[T any](e *Engine, ctx context.Context, stmt func(context.Context) (T, error)) (T, error) {
	if e.cfg.HonoursContext {
		return stmt(ctx)
	}
	return bounded(ctx, stmt)
}
