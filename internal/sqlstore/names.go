package sqlstore

import (
	"container/list"
	"fmt"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// nameCacheSize bounds how many names a provider remembers. A name it forgot
// costs its next acquisition two more statements (the name check and the
// INSERT); a name in use is never forgotten, since every use moves it to the front.
const nameCacheSize = 10_000

// nameCache is what a provider knows of the names it has locked, least recently
// used first out. It does no I/O, so no caller waits on it for long.
type nameCache struct {
	mu    sync.Mutex
	max   int
	order *list.List               // of *nameState, most recent at the front
	names map[string]*list.Element // by the exact name
	keys  map[string]string        // collation key -> name, for names in the cache
}

// nameState is what a provider knows of one name's row.
type nameState struct {
	name, key string
	arg       any // name as a statement argument, converted once

	mu        sync.Mutex
	exists    bool      // the row was seen
	checkedAt time.Time // when the row was last seen to exist
}

func newNameCache(max int) *nameCache {
	return &nameCache{max: max, order: list.New(), names: make(map[string]*list.Element), keys: make(map[string]string)}
}

// get returns name's state and marks it recently used.
func (c *nameCache) get(name string) (*nameState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.names[name]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*nameState), true
}

// add remembers a name whose collation key is key, forgetting the least recently
// used name when full. A different name with the same key is the same row: an
// error, since two jobs under it would block each other.
func (c *nameCache) add(name, key string) (*nameState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.names[name]; ok { // added meanwhile by another caller
		c.order.MoveToFront(el)
		return el.Value.(*nameState), nil
	}
	if other, ok := c.keys[key]; ok {
		return nil, sameRow(name, other)
	}
	s := &nameState{name: name, key: key, arg: name}
	c.names[name] = c.order.PushFront(s)
	c.keys[key] = name
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*nameState)
		delete(c.names, old.name)
		delete(c.keys, old.key)
	}
	return s, nil
}

// len reports how many names are remembered.
func (c *nameCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// needsInsert reports whether the row must be inserted first: it was never seen,
// or not seen for mostFor (it may have been deleted by hand).
func (s *nameState) needsInsert(now time.Time, mostFor time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.exists || now.Sub(s.checkedAt) >= mostFor
}

// seen records that the row existed at now.
func (s *nameState) seen(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exists = true
	if now.After(s.checkedAt) {
		s.checkedAt = now
	}
}

// sameRow is the error of an attempt on name, which the name column's
// collation makes the row of other.
func sameRow(name, other string) error {
	return fmt.Errorf("%w: %w: lock %q is the same row as lock %q under the name column's collation: "+
		"use names that differ by more than case, accents or trailing spaces", lockerr.InvalidConfig,
		lockerr.DuplicateName, name, other)
}
