package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

func items(names ...string) []BatchItem {
	its := make([]BatchItem, len(names))
	for i, n := range names {
		its[i] = BatchItem{Name: n, MostFor: time.Minute}
	}
	return its
}

// A batch is one statement for the names, sorted, and one for the new names'
// checks; the results come back in the caller's order, each with its own
// token; a later batch of known names is the one statement alone.
func TestBatchOneStatementSortedResultsInOrder(t *testing.T) {
	store := newFakeStore()
	store.rows["b"] = "other.1" // held
	e := testEngine(t, store)
	ctx := context.Background()
	res, err := e.TryLockBatch(ctx, items("c", "b", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if store.sent != 2 || store.nameKeys != 1 {
		t.Fatalf("sent %d statements (%d name checks), want 2 (1)", store.sent, store.nameKeys)
	}
	if got := store.batches[0]; !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("rows sent in order %v, want by name", got)
	}
	if res[0].Lock == nil || res[0].Lock.name != "c" || res[2].Lock == nil || res[2].Lock.name != "a" {
		t.Fatalf("results not in the order of the items: %+v", res)
	}
	if !errors.Is(res[1].Err, lockerr.NotAcquired) || res[1].Lock != nil {
		t.Fatalf("held lock: want NotAcquired, got %+v", res[1])
	}
	if res[0].Lock.args.Token == res[2].Lock.args.Token {
		t.Fatal("two acquisitions of one batch share a token")
	}
	if err := res[0].Lock.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	before := store.sent
	if _, err := e.TryLockBatch(ctx, items("c", "a")); err != nil {
		t.Fatal(err)
	}
	if n := store.sent - before; n != 1 {
		t.Fatalf("a batch of known names sent %d statements, want 1", n)
	}
}

// A conflict is sent again once; a second makes every attempt NotAcquired,
// and no error for the batch.
func TestBatchConflictRetriedOnceThenNotAcquired(t *testing.T) {
	for _, tc := range []struct {
		conflicts int
		taken     bool
	}{{1, true}, {2, false}} {
		store := newFakeStore()
		store.conflicts = tc.conflicts
		e := testEngine(t, store)
		res, err := e.TryLockBatch(context.Background(), items("a", "b"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if taken := r.Lock != nil; taken != tc.taken || (!taken && !errors.Is(r.Err, lockerr.NotAcquired)) {
				t.Fatalf("%d conflicts: got %+v, want taken %v", tc.conflicts, r, tc.taken)
			}
		}
		if len(store.batches) != 2-tc.conflicts || store.conflicts != 0 {
			t.Fatalf("%d conflicts: %d batches went through, %d conflicts left", tc.conflicts, len(store.batches), store.conflicts)
		}
	}
}

// A name the column cannot store, or that is the row of a name used before,
// is that attempt's error, as in TryLock; of two names of the batch that are
// one row, the later is its own error (naming both) and the first is taken.
func TestBatchNameErrors(t *testing.T) {
	store := newFakeStore()
	store.keyFunc = strings.ToLower
	e := testEngine(t, store)
	res, err := e.TryLockBatch(context.Background(), items("a", "bad-name"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Lock == nil || !errors.Is(res[1].Err, lockerr.InvalidConfig) {
		t.Fatalf("want a taken and an InvalidConfig, got %+v", res)
	}
	res, err = e.TryLockBatch(context.Background(), items("x", "A"))
	if err != nil || res[0].Lock == nil || !errors.Is(res[1].Err, lockerr.InvalidConfig) ||
		!errors.Is(res[1].Err, lockerr.DuplicateName) {
		t.Fatalf("a name that is a known name's row: want its InvalidConfig and DuplicateName, got %+v, %v", res, err)
	}
	res, err = e.TryLockBatch(context.Background(), items("Job", "y", "job"))
	if err != nil {
		t.Fatalf("two new names of one row fail the batch: %v", err)
	}
	if res[0].Lock == nil || res[1].Lock == nil || !errors.Is(res[2].Err, lockerr.DuplicateName) ||
		!strings.Contains(res[2].Err.Error(), `"job" is the same row as lock "Job"`) {
		t.Fatalf("two new names of one row: want the first and y taken, the second's own error naming both, got %+v", res)
	}
}

// A server without the batch statement gets the attempts one by one.
func TestBatchFallsBackOneByOne(t *testing.T) {
	store := newFakeStore()
	store.upserts = true
	store.noBatch = true
	store.rows["b"] = "other.1"
	e := testEngine(t, store)
	res, err := e.TryLockBatch(context.Background(), items("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Lock == nil || !errors.Is(res[1].Err, lockerr.NotAcquired) {
		t.Fatalf("want a taken and b NotAcquired, got %+v", res)
	}
}

// Without the batch statement, a store failure on one member is that
// member's error: the others' attempts are made, and a lock taken before it
// is not left held with nobody told.
func TestBatchOneByOneStoreFailureIsItsMembers(t *testing.T) {
	store := newFakeStore()
	store.upserts = true
	store.noBatch = true
	failure := errors.New("connection reset")
	store.failing = map[string]error{"b": failure}
	e := testEngine(t, store)
	res, err := e.TryLockBatch(context.Background(), items("a", "b", "c"))
	if err != nil {
		t.Fatalf("one member's store failure failed the batch: %v", err)
	}
	if res[0].Lock == nil || !errors.Is(res[1].Err, failure) || res[2].Lock == nil {
		t.Fatalf("want a and c taken, b its own error, got %+v", res)
	}
}

// A row another transaction holds past the statement's lock wait fails its
// member alone: the batch is sent again without it, and it is NotAcquired.
func TestBatchBusyRowFailsItsMemberAlone(t *testing.T) {
	store := newFakeStore()
	store.busy = map[string]bool{"b": true}
	e := testEngine(t, store)
	res, err := e.TryLockBatch(context.Background(), items("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Lock == nil || !errors.Is(res[1].Err, lockerr.NotAcquired) || res[2].Lock == nil {
		t.Fatalf("want a and c taken, b NotAcquired, got %+v", res)
	}
	if len(store.batches) != 1 || strings.Join(store.batches[0], ",") != "a,c" {
		t.Fatalf("batches that went through: %v; want [a c] alone", store.batches)
	}
}

// A row another transaction is inserting makes the batch wait out its lock
// wait, and no read can tell which row it was: the members are attempted one
// by one, each bounded the same way; the pending one is NotAcquired, the
// others are taken.
func TestBatchPendingRowFailsItsMemberAlone(t *testing.T) {
	store := newFakeStore()
	store.pending = map[string]bool{"b": true}
	e := testEngine(t, store)
	res, err := e.TryLockBatch(context.Background(), items("c", "b", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Lock == nil || !errors.Is(res[1].Err, lockerr.NotAcquired) || res[2].Lock == nil {
		t.Fatalf("want a and c taken, b NotAcquired, got %+v", res)
	}
	if got := fmt.Sprint(store.batches); got != "[[a] [c]]" {
		t.Fatalf("batches that went through: %s; want [a] then [c], one by one", got)
	}
}

// A batch statement that ran but whose result could not be read is the
// batch's error, and the rows it took are released: no lock is left held with
// nobody told.
func TestBatchUnreadResultReleasesItsRows(t *testing.T) {
	store := newFakeStore()
	store.unread = true
	e := testEngine(t, store)
	_, err := e.TryLockBatch(context.Background(), items("a", "b"))
	if !errors.Is(err, ErrUnread) || !strings.Contains(err.Error(), "released") {
		t.Fatalf("want ErrUnread saying the rows were released, got %v", err)
	}
	for name, token := range store.rows {
		if token != "" {
			t.Errorf("row %s left held by %s", name, token)
		}
	}
}
