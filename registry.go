package shedlock

import (
	"context"
	"errors"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock/internal/jobname"
)

// recordEntry remembers the entry Schedule added under name, so that the name
// can be registered again once the entry is removed (see freeRemoved).
func (e *Executor) recordEntry(name string, c *cron.Cron, id cron.EntryID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.entries == nil {
		e.entries = make(map[string]cronEntry)
	}
	e.entries[jobname.Key(name)] = cronEntry{c, id}
}

// freeRemoved frees name, and the name the store keeps in the same row
// (storeKey, the provider's NameKey of name; "": none), if Schedule
// registered it for a cron entry that has since been removed from its cron.
// robfig/cron has no removal hook, so the entry is looked up at the next
// registration of the name, or of its store twin, instead. Entry ids are
// never reused, so an entry found gone stays gone and cron calls its job no
// more: the name has no job left. A run of that job still under way keeps the
// name in e.running, which refuses a second run of it in this process, whatever
// registered the name since.
//
// c.Entry is called without e.mu: c holds its own lock while it applies its
// chain's wrappers to a job it adds, and such a wrapper may register a name
// here; holding e.mu while waiting for c's lock could then deadlock.
func (e *Executor) freeRemoved(name, storeKey string) {
	e.mu.Lock()
	keys := []string{jobname.Key(name)}
	if twin, ok := e.storeNames[storeKey]; ok && storeKey != "" {
		if k := jobname.Key(twin); k != keys[0] {
			keys = append(keys, k)
		}
	}
	e.mu.Unlock()
	for _, key := range keys {
		e.freeRemovedKey(key)
	}
}

// freeRemovedKey frees the name whose jobname.Key is key if its Schedule
// entry has been removed (see freeRemoved).
func (e *Executor) freeRemovedKey(key string) {
	e.mu.Lock()
	ent, ok := e.entries[key]
	e.mu.Unlock()
	if !ok || ent.c.Entry(ent.id).Valid() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.entries[key] == ent { // else another registration freed it meanwhile
		delete(e.entries, key)
		e.freeLocked(key)
	}
}

// unregister frees a name that Schedule claimed for a job it could not add.
func (e *Executor) unregister(name string) {
	key := jobname.Key(name)
	e.mu.Lock()
	e.freeLocked(key)
	e.mu.Unlock()
}

// freeLocked frees the name whose jobname.Key is key. e.mu must be held.
func (e *Executor) freeLocked(key string) {
	delete(e.entries, key)
	delete(e.names, key)
	if sk, ok := e.storeKeys[key]; ok {
		delete(e.storeNames, sk)
		delete(e.storeKeys, key)
	}
}

// storeKey asks a NameKeyer provider how its store compares name, within the
// acquire timeout: a name the store cannot keep is refused, like a config it
// would refuse. A store that cannot be asked now (not up yet, its table not
// made) is no reason to refuse a job: the name is registered without a key,
// and an attempt on a name that the store finds to be another name's row
// fails with ErrDuplicateName, naming that name. One that did not answer
// within the timeout is not asked again by this executor.
func (e *Executor) storeKey(name string) (string, error) {
	nk, ok := e.provider.(NameKeyer)
	if !ok || e.noNameKeys.Load() {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.attempts.timeout)
	defer cancel()
	key, err := nk.NameKey(ctx, name)
	switch {
	case errors.Is(err, ErrInvalidConfig):
		return "", err
	case err != nil:
		// A store that did not answer in time is not asked again: each
		// registration would wait out the timeout.
		if errors.Is(err, context.DeadlineExceeded) {
			e.noNameKeys.Store(true)
		}
		e.log.Warn("shedlock: could not ask the store how it compares the lock name; registered without it: "+
			"if the store keeps it in another name's row, its runs fail with ErrDuplicateName", "lock", name, "error", err)
		return "", nil
	}
	return key, nil
}
