package shedlocktest

import (
	"context"
	"errors"
	"sync"
)

// Fault is what befalls the next write a Faults is armed for. In each, the
// store applies the write: only what the caller hears of it goes wrong, so
// the caller cannot know whether it took effect.
type Fault int

const (
	// AnswerLost: the store applies the write once and the caller gets
	// ErrAnswerLost instead of its answer, as when a connection drops after
	// the request reached the store.
	AnswerLost Fault = iota + 1
	// AnswerLate: the store applies the write once and the answer comes only
	// after the caller's context has ended, so the caller gets the context's
	// error. A call whose context can never end gets ErrAnswerLost instead.
	AnswerLate
	// Replayed: the store applies the write twice, as a client or driver that
	// sends a request again when it saw no answer to the first, and the
	// caller gets the answer to the second.
	Replayed
)

func (f Fault) String() string {
	switch f {
	case AnswerLost:
		return "AnswerLost"
	case AnswerLate:
		return "AnswerLate"
	case Replayed:
		return "Replayed"
	}
	return "Fault(?)"
}

// ErrAnswerLost is what a write struck by AnswerLost returns.
var ErrAnswerLost = errors.New("shedlocktest: the store applied the call, but its answer was lost")

// Faults strikes the writes of one provider with the faults it is armed with,
// one fault a write, in the order armed. An adapter between the provider and
// its store (a driver.Connector from Connector, a go-redis hook, a gRPC
// interceptor) passes each write through Do, and every other call straight
// on. The zero value is ready to use and strikes nothing until armed.
type Faults struct {
	mu    sync.Mutex
	armed []Fault
	fired int
}

// Arm makes the next write not yet struck suffer fault.
func (f *Faults) Arm(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = append(f.armed, fault)
}

// Fired returns how many armed faults have struck a write, so that a test
// can tell that its fault reached the store rather than nothing at all.
func (f *Faults) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Pending returns how many armed faults wait for a write.
func (f *Faults) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.armed)
}

// Disarm removes the armed faults that have struck no write yet, and returns
// how many there were.
func (f *Faults) Disarm() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.armed)
	f.armed = nil
	return n
}

// take removes the next armed fault; 0 for none.
func (f *Faults) take() Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.armed) == 0 {
		return 0
	}
	fault := f.armed[0]
	f.armed = f.armed[1:]
	return fault
}

// settle records fault as fired, or puts it back first in line when the
// write it was to strike failed.
func (f *Faults) settle(fault Fault, applied bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if applied {
		f.fired++
		return
	}
	f.armed = append([]Fault{fault}, f.armed...)
}

// Do sends one write through call, the round trip to the store, struck by the
// next armed fault if there is one. A call that fails was not applied as far
// as Do can tell (a driver's ErrSkip, a script the server has not cached yet,
// a store that refused it): its error is returned as it is and the fault
// waits for the next write.
func (f *Faults) Do(ctx context.Context, call func(context.Context) error) error {
	fault := f.take()
	if fault == 0 {
		return call(ctx)
	}
	switch fault {
	case AnswerLate:
		// The store goes on with the write when the caller stops waiting.
		err := call(context.WithoutCancel(ctx))
		f.settle(fault, err == nil)
		if err != nil {
			return err
		}
		if ctx.Done() == nil {
			return ErrAnswerLost
		}
		<-ctx.Done()
		return ctx.Err()
	case Replayed:
		err := call(ctx)
		f.settle(fault, err == nil)
		if err != nil {
			return err
		}
		return call(ctx)
	default: // AnswerLost
		err := call(ctx)
		f.settle(fault, err == nil)
		if err != nil {
			return err
		}
		return ErrAnswerLost
	}
}
