package shedlock

import (
	"context"
	"fmt"

	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

var (
	_ BatchLocker = (*MySQLProvider)(nil)
	_ BatchLocker = (*PostgresProvider)(nil)
	_ BatchLocker = (*SQLiteProvider)(nil)
)

// TryLockBatch makes one attempt on each of cfgs together (see
// [BatchLocker]): on PostgreSQL and SQLite one statement for all of them, on
// MySQL and MariaDB two (the upsert, then a read of which rows now carry this
// batch's tokens), and on the first use of names, one more that checks them
// against the name column (none on SQLite, nor on PostgreSQL under a
// deterministic collation). A lock it returns is the same as one from TryLock:
// its Unlock and Extend are TryLock's.
//
// A config that is not valid, or that the store cannot hold, is that entry's
// error (ErrInvalidConfig); so is the later of two names that the name
// column's collation makes one row (with ErrDuplicateName, naming both), while
// the first is attempted as any other; two configs of one exact name are the
// batch's. A deadlock, serialization
// failure or lock wait timeout rolls the whole statement back and takes
// nothing: it is sent again once, at once, and after a second every entry is
// ErrNotAcquired, as a single attempt's would be.
func (p *sqlProvider) TryLockBatch(ctx context.Context, cfgs []LockConfig) ([]LockResult, error) {
	return p.tryLockBatch(ctx, cfgs, LockConfig.Validate)
}

// TryLockBatchChecked is TryLockBatch on configs the executor has validated
// (lockcfg.Checked, which only this repository's modules can name).
func (p *sqlProvider) TryLockBatchChecked(ctx context.Context, cfgs []LockConfig, _ lockcfg.Checked) ([]LockResult, error) {
	return p.tryLockBatch(ctx, cfgs, nil)
}

// tryLockBatch is TryLockBatch, validating each config with validate unless
// it is nil.
func (p *sqlProvider) tryLockBatch(ctx context.Context, cfgs []LockConfig, validate func(LockConfig) error) ([]LockResult, error) {
	res := make([]LockResult, len(cfgs))
	seen := make(map[string]bool, len(cfgs))
	items := make([]sqlstore.BatchItem, 0, len(cfgs))
	var index []int // of each item in cfgs
	for i, c := range cfgs {
		if seen[c.Name] {
			return nil, fmt.Errorf("%w: lock %q appears twice in one batch", ErrInvalidConfig, c.Name)
		}
		seen[c.Name] = true
		if validate != nil {
			if err := validate(c); err != nil {
				res[i].Err = err
				continue
			}
		}
		if err := p.engine.CheckEnd(c.Name, c.LockAtMostFor); err != nil {
			res[i].Err = err
			continue
		}
		items = append(items, sqlstore.BatchItem{Name: c.Name, MostFor: c.LockAtMostFor, LeastFor: c.LockAtLeastFor})
		index = append(index, i)
	}
	if len(items) == 0 {
		return res, nil
	}
	got, err := p.engine.TryLockBatch(ctx, items)
	if err != nil {
		return nil, err
	}
	for k, r := range got {
		i := index[k]
		res[i].Err = r.Err
		if r.Lock != nil { // a nil *Lock must not become a non-nil Lock
			res[i].Lock = r.Lock
		}
	}
	return res, nil
}
