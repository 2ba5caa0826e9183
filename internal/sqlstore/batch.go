package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// BatchItem is one validated attempt of a batch.
type BatchItem struct {
	Name              string
	MostFor, LeastFor time.Duration
}

// BatchResult is one attempt's outcome: Lock when taken, else Err.
type BatchResult struct {
	Lock *Lock
	Err  error
}

// BatchArgs is one row of a batch statement, as plain values that a dialect
// packs into one parameter (an array literal, a JSON document).
type BatchArgs struct {
	Name, Token string
	MostFor     time.Duration
}

// ErrConflict is what a store's AcquireBatch returns when a conflict with
// another transaction (deadlock, serialization failure, lock wait timeout)
// rolled the whole statement back: nothing was taken.
var ErrConflict = errors.New("shedlock: the batch statement was rolled back by a conflict with another transaction")

// ErrLockWait is the ErrConflict of a batch statement that waited past its
// bound for a row another transaction holds or is making (MySQL's lock wait
// timeout, PostgreSQL's lock_timeout): rolled back, nothing was taken. A row
// being inserted, or a gap another transaction locked, is not one BusyRows
// can see, so the engine then makes the attempts one by one.
var ErrLockWait = fmt.Errorf("%w: a row's lock wait ran out", ErrConflict)

// ErrUnread is what a store's AcquireBatch returns when its statement ran
// but its result could not be read (a row it could not scan, a connection
// lost while the rows came): it may have taken rows, and the engine releases
// the batch's tokens, so that no lock is left held with nobody told.
var ErrUnread = errors.New("shedlock: the batch statement ran, but its result could not be read")

// ErrNoBatch is what a store's AcquireBatch returns when the server cannot run
// the batch statement (a MariaDB before 10.6 has no JSON_TABLE): the engine
// then makes the attempts one by one.
var ErrNoBatch = errors.New("shedlock: the server cannot run the batch statement")

// TryLockBatch makes one attempt on each of items, together: where the store
// can, one statement (two on MySQL) for all of them, after one more for the
// names this engine has not seen. Each row is taken on its own condition,
// with its own token, exactly as TryLock takes it. Results are in the order of
// items. Of two names that are one row under the column's collation, the later
// one is that item's error (lockerr.InvalidConfig and lockerr.DuplicateName);
// exact duplicates are the batch's (the caller checks those).
//
// A conflict that rolled the statement back is handled by acquireBatch: one
// member's row is that member's problem alone.
func (e *Engine) TryLockBatch(ctx context.Context, items []BatchItem) ([]BatchResult, error) {
	res := make([]BatchResult, len(items))
	states, err := e.batchStates(ctx, items, res)
	if err != nil {
		return nil, err
	}
	var order []int // items to send, by name: the one order every instance takes rows in
	for i := range items {
		if res[i].Err == nil {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(items[a].Name, items[b].Name) })
	args := make([]BatchArgs, len(order))
	for k, i := range order {
		args[k] = BatchArgs{Name: items[i].Name, Token: e.token(), MostFor: ceilMillis(items[i].MostFor)}
	}
	if len(args) == 0 {
		return res, nil
	}
	now := time.Now()
	grants, errs, err := e.acquireBatch(ctx, args)
	switch {
	case errors.Is(err, ErrNoBatch):
		return e.oneByOne(ctx, items, res)
	case errors.Is(err, ErrConflict):
		for _, i := range order {
			res[i].Err = lockerr.NotAcquired
		}
		return res, nil
	case err != nil:
		return nil, fmt.Errorf("shedlock: acquire a batch of %d locks: %w", len(args), err)
	}
	for k, i := range order {
		switch {
		case errs[k] != nil:
			res[i].Err = errs[k]
			continue
		case !grants[k].OK:
			states[i].seen(now) // the upsert made the row
			res[i].Err = refused(grants[k])
			continue
		}
		states[i].seen(now)
		a := Args{Name: states[i].arg, Token: args[k].Token}
		res[i].Lock = e.grant(items[i].Name, a, grants[k].Fence, now, args[k].MostFor, items[i].LeastFor)
	}
	return res, nil
}

// acquireBatch runs the batch statement, and after a conflict that rolled it
// back:
//
//   - without the rows another transaction holds (BusyRows), which are not
//     acquired, so that a row an open transaction keeps fails its member
//     alone;
//   - one member at a time, each as a batch of one with the same bound on its
//     wait, after a lock wait that BusyRows cannot explain (a row another
//     transaction is inserting, or a gap it locked: rows that do not exist
//     yet) or that came again: a member that still waits is not acquired, a
//     member's failure its own error (errs), and the others are taken;
//   - after a second deadlock, every member is not acquired (ErrConflict).
//
// The rows are taken in one fixed order, so deadlocks are rare, and nothing
// was taken by a statement a conflict rolled back.
func (e *Engine) acquireBatch(ctx context.Context, args []BatchArgs) ([]Grant, []error, error) {
	errs := make([]error, len(args))
	first, err := e.sendBatch(ctx, args)
	if !errors.Is(err, ErrConflict) || ctx.Err() != nil {
		return first, errs, err
	}
	busy, berr := statement(e, ctx, func(ctx context.Context) ([]bool, error) { return e.store.BusyRows(ctx, args) })
	if berr != nil || len(busy) != len(args) {
		busy = make([]bool, len(args)) // cannot tell: none
	}
	rest, at := make([]BatchArgs, 0, len(args)), make([]int, 0, len(args))
	for k, a := range args {
		if busy[k] {
			errs[k] = lockerr.NotAcquired
			continue
		}
		rest, at = append(rest, a), append(at, k)
	}
	grants := make([]Grant, len(args))
	if len(rest) == 0 {
		return grants, errs, nil
	}
	if !errors.Is(err, ErrLockWait) || len(rest) < len(args) { // a deadlock, or a wait BusyRows explained
		got, err := e.sendBatch(ctx, rest)
		switch {
		case err == nil:
			for j, k := range at {
				grants[k] = got[j]
			}
			return grants, errs, nil
		case !errors.Is(err, ErrLockWait) || ctx.Err() != nil:
			return nil, nil, err
		}
	}
	for j, k := range at {
		got, err := e.sendBatch(ctx, rest[j:j+1])
		switch {
		case err == nil:
			grants[k] = got[0]
		case errors.Is(err, ErrConflict): // it still waits, or lost a deadlock: as a single attempt's conflict
			errs[k] = lockerr.NotAcquired
		default:
			errs[k] = fmt.Errorf("shedlock: acquire %q: %w", rest[j].Name, err)
		}
	}
	return grants, errs, nil
}

// sendBatch runs the batch statement once. When the statement ran but its
// result could not be read (ErrUnread), it releases every token of args,
// so that a row it took is not left held with nobody told.
func (e *Engine) sendBatch(ctx context.Context, args []BatchArgs) ([]Grant, error) {
	grants, err := statement(e, ctx, func(ctx context.Context) ([]Grant, error) { return e.store.AcquireBatch(ctx, args) })
	if errors.Is(err, ErrUnread) {
		return nil, e.releaseUnread(ctx, args, err)
	}
	if err == nil && len(grants) != len(args) {
		return nil, fmt.Errorf("the store reported %d outcomes for %d rows", len(grants), len(args))
	}
	return grants, err
}

// releaseUnread releases the tokens of args after a batch statement whose
// result could not be read (err): a row that does not hold a token is left
// as it is. It returns err, saying what it could not release, held until its
// LockAtMostFor as with a TryLock whose reply was lost.
func (e *Engine) releaseUnread(ctx context.Context, args []BatchArgs, err error) error {
	var failed []string
	for _, a := range args {
		a := Args{Name: a.Name, Token: a.Token}
		if _, rerr := statement(e, ctx, func(ctx context.Context) (bool, error) { return e.store.Release(ctx, a, 0) }); rerr != nil {
			failed = append(failed, fmt.Sprintf("%q", a.Name))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w; the rows it may have taken of %s could not be released, and are held "+
			"until their LockAtMostFor", err, strings.Join(failed, ", "))
	}
	return fmt.Errorf("%w; the rows it may have taken were released", err)
}

// batchStates finds each item's name state, checking the names this engine
// has not seen with one NameKeys call. A name the column cannot store, or one
// that is another cached name's row, is that item's error; of two items that
// are one row, the later one's.
func (e *Engine) batchStates(ctx context.Context, items []BatchItem, res []BatchResult) ([]*nameState, error) {
	states := make([]*nameState, len(items))
	var fresh []int
	for i, it := range items {
		if st, ok := e.names.get(it.Name); ok {
			states[i] = st
		} else {
			fresh = append(fresh, i)
		}
	}
	keys := make([]string, len(items))
	for i, st := range states {
		if st != nil {
			keys[i] = st.key
		}
	}
	if len(fresh) > 0 {
		names := make([]string, len(fresh))
		for k, i := range fresh {
			names[k] = items[i].Name
		}
		got, errs, err := e.store.NameKeys(ctx, names)
		if err != nil {
			return nil, fmt.Errorf("shedlock: check %d new lock names: %w", len(names), err)
		}
		for k, i := range fresh {
			if errs[k] != nil {
				res[i].Err = fmt.Errorf("shedlock: acquire %q: %w", items[i].Name, errs[k])
			}
			keys[i] = got[k]
		}
	}
	byKey := make(map[string]int, len(items))
	for i := range items {
		if res[i].Err != nil {
			continue
		}
		if j, ok := byKey[keys[i]]; ok { // the later twin's own error: the others go on
			res[i].Err = sameRow(items[i].Name, items[j].Name)
			continue
		}
		byKey[keys[i]] = i
	}
	for _, i := range fresh {
		if res[i].Err != nil {
			continue
		}
		st, err := e.names.add(items[i].Name, keys[i])
		if err != nil {
			res[i].Err = err
			continue
		}
		states[i] = st
	}
	return states, nil
}

// oneByOne makes the attempts that have no result yet with TryLock, for a
// store whose server cannot run the batch statement. Each outcome, a store
// failure too, is its member's: a lock taken before a failure is the
// earlier member's, never left held with nobody told.
func (e *Engine) oneByOne(ctx context.Context, items []BatchItem, res []BatchResult) ([]BatchResult, error) {
	for i, it := range items {
		if res[i].Err != nil {
			continue
		}
		l, err := e.TryLock(ctx, it.Name, it.MostFor, it.LeastFor)
		res[i] = BatchResult{Lock: l, Err: err}
	}
	return res, nil
}
