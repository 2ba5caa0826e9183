package shedlock

import (
	"context"
	"fmt"
)

// adminStore is one SQL store's administrative statements; the functions below
// are what every SQL provider's Admin methods share.
type adminStore interface {
	// ready runs the store's first-use checks, once they pass.
	ready(ctx context.Context) error
	// probe runs a statement that needs the table, its columns and the right to
	// write them, and changes nothing.
	probe(ctx context.Context) error
	// rows reads the lock rows, every one by name, or only the one of exactly
	// name when name is not empty.
	rows(ctx context.Context, name string) ([]lockRow, error)
	// clear frees r's row, marking it ForceUnlockedBy, if it still holds the
	// acquisition r read (the same locked_by and locked_at); false if not.
	clear(ctx context.Context, r lockRow) (bool, error)
	// adminTable is the table as WithTableName gave it, for messages.
	adminTable() string
}

// lockRow is a row as a store read it: what it reports, and locked_at in the
// form in which the store compares it again.
type lockRow struct {
	LockInfo
	lockedAtKey any
}

func adminLocks(ctx context.Context, s adminStore) ([]LockInfo, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	rows, err := s.rows(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the locks of table %s: %w", s.adminTable(), err)
	}
	locks := make([]LockInfo, len(rows))
	for i, r := range rows {
		locks[i] = r.LockInfo
	}
	return locks, nil
}

func adminHealthCheck(ctx context.Context, s adminStore) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.probe(ctx); err != nil {
		return fmt.Errorf("shedlock: health check of table %s: %w", s.adminTable(), err)
	}
	return nil
}

func adminInspect(ctx context.Context, s adminStore, name string) (LockInfo, error) {
	r, err := adminRow(ctx, s, name)
	return r.LockInfo, err
}

func adminRow(ctx context.Context, s adminStore, name string) (lockRow, error) {
	if name == "" {
		return lockRow{}, fmt.Errorf("%w: the name is empty", ErrLockNotFound)
	}
	if err := s.ready(ctx); err != nil {
		return lockRow{}, err
	}
	rows, err := s.rows(ctx, name)
	if err != nil {
		return lockRow{}, fmt.Errorf("shedlock: read lock %q of table %s: %w", name, s.adminTable(), err)
	}
	if len(rows) == 0 {
		return lockRow{}, fmt.Errorf("%w: %q in table %s", ErrLockNotFound, name, s.adminTable())
	}
	return rows[0], nil
}

// forceUnlockAttempts bounds how often ForceUnlock reads again because the lock
// changed hands between its read and its write.
const forceUnlockAttempts = 5

// adminForceUnlock reads the row, then frees it only if it still holds what was
// read, so that the holder it reports is the one it took the lock from.
func adminForceUnlock(ctx context.Context, s adminStore, name string) (LockInfo, error) {
	for range forceUnlockAttempts {
		r, err := adminRow(ctx, s, name)
		if err != nil {
			return LockInfo{}, err
		}
		cleared, err := s.clear(ctx, r)
		if err != nil {
			return LockInfo{}, fmt.Errorf("shedlock: force unlock %q in table %s: %w", name, s.adminTable(), err)
		}
		if cleared {
			return r.LockInfo, nil
		}
	}
	return LockInfo{}, fmt.Errorf("shedlock: force unlock %q in table %s: the lock changed hands %d times "+
		"while being freed; try again", name, s.adminTable(), forceUnlockAttempts)
}
