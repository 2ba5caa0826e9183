package shedlock

import "context"

// BatchLocker is a LockProvider that can make attempts on many locks in one
// round trip. At a herd's tick, when attempts queue at an executor whose
// provider is one, the executor sends the queued attempts together instead of
// one statement each; a lone attempt still goes alone, through TryLock.
type BatchLocker interface {
	LockProvider
	// TryLockBatch makes one attempt on each of cfgs, together, and returns
	// one LockResult per config, in the order of cfgs: the lock taken, or why
	// not (ErrNotAcquired when another instance holds it; a config the store
	// refuses, for that config alone). One config's problem is its own: a
	// name the store keeps in another config's row, or a row another
	// transaction holds, fails that config, not the others nor the batch. The
	// names of cfgs are distinct. Each
	// acquisition is conditional on its own row, has its own token and fencing
	// token, and is exactly what TryLock would have taken. The store takes the
	// rows in one fixed order, so that two instances' batches never deadlock.
	//
	// A non-nil error is the batch's as a whole (the store failed, ctx ended):
	// then the results are nil, and a lock the store may have taken before the
	// failure is held until its LockAtMostFor, as with a TryLock whose
	// response was lost.
	TryLockBatch(ctx context.Context, cfgs []LockConfig) ([]LockResult, error)
}

// LockResult is one attempt of a batch (BatchLocker): Lock when it took the
// lock, else Err.
type LockResult struct {
	Lock Lock
	Err  error
}
