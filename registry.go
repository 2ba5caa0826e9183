package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock/internal/jobname"
)

// registry is an executor's job names: one job per name, as the store
// compares names, with the cron entries Schedule added. It has its own lock;
// Stop closes it, and a registration after that is refused.
type registry struct {
	mu     sync.Mutex
	closed bool
	names  map[string]string // jobname.Key -> name registered by WithLock, Wrap, Schedule and FixedDelay
	// the provider's NameKey -> name registered, for a NameKeyer; and
	// jobname.Key -> NameKey, to free it with the name
	storeNames, storeKeys map[string]string
	entries               map[string]cronEntry // jobname.Key -> the cron entry Schedule added; see freeRemoved
	loops                 map[string]*fixedDelayLoop
	runners               map[string]runner // jobname.Key -> how to run the job on a run-now request
	noNameKeys            atomic.Bool       // the provider's NameKey timed out once: not asked again
}

// cronEntry is where Schedule added a name's job (see freeRemoved).
type cronEntry struct {
	c  *cron.Cron
	id cron.EntryID
}

func newRegistry() *registry {
	return &registry{names: make(map[string]string), storeNames: make(map[string]string),
		storeKeys: make(map[string]string), entries: make(map[string]cronEntry), loops: make(map[string]*fixedDelayLoop),
		runners: make(map[string]runner)}
}

// register claims name for one job, unless the registry is closed; storeKey
// is the provider's NameKey of it ("": none). A name whose Schedule entry was
// removed is free again (freeRemoved).
func (g *registry) register(name, storeKey string) error {
	g.freeRemoved(name, storeKey)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fmt.Errorf("%w: lock %q: registered after Stop", ErrStopped, name)
	}
	key := jobname.Key(name)
	if first, ok := g.names[key]; ok {
		if first == name {
			return fmt.Errorf("%w: %q", ErrDuplicateName, name)
		}
		return fmt.Errorf("%w: %q is %q to the store (names differing only by case, accents, emoji or trailing spaces are one lock)",
			ErrDuplicateName, name, first)
	}
	if first, ok := g.storeNames[storeKey]; ok && storeKey != "" {
		return fmt.Errorf("%w: %q is %q to the store (its collation keeps both in one row)", ErrDuplicateName, name, first)
	}
	g.names[key] = name
	if storeKey != "" {
		g.storeNames[storeKey] = name
		g.storeKeys[key] = storeKey
	}
	return nil
}

// close refuses every later registration.
func (g *registry) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// recordEntry remembers the entry Schedule added under name, so that the name
// can be registered again once the entry is removed (see freeRemoved).
func (g *registry) recordEntry(name string, c *cron.Cron, id cron.EntryID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entries[jobname.Key(name)] = cronEntry{c, id}
}

// recordLoop remembers name's fixed-delay loop, for Jobs.
func (g *registry) recordLoop(name string, l *fixedDelayLoop) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.loops[jobname.Key(name)] = l
}

// freeRemoved frees name, and the name the store keeps in the same row
// (storeKey, the provider's NameKey of name; "": none), if Schedule
// registered it for a cron entry that has since been removed from its cron.
// robfig/cron has no removal hook, so the entry is looked up at the next
// registration of the name, or of its store twin, instead. Entry ids are
// never reused, so an entry found gone stays gone and cron calls its job no
// more: the name has no job left. A run of that job still under way keeps the
// name among the runs here, which refuses a second run of it in this
// process, whatever registered the name since.
//
// c.Entry is called without g.mu: c holds its own lock while it applies its
// chain's wrappers to a job it adds, and such a wrapper may register a name
// here; holding g.mu while waiting for c's lock could then deadlock.
func (g *registry) freeRemoved(name, storeKey string) {
	g.mu.Lock()
	keys := []string{jobname.Key(name)}
	if twin, ok := g.storeNames[storeKey]; ok && storeKey != "" {
		if k := jobname.Key(twin); k != keys[0] {
			keys = append(keys, k)
		}
	}
	g.mu.Unlock()
	for _, key := range keys {
		g.freeRemovedKey(key)
	}
}

// freeRemovedKey frees the name whose jobname.Key is key if its Schedule
// entry has been removed (see freeRemoved).
func (g *registry) freeRemovedKey(key string) {
	g.mu.Lock()
	ent, ok := g.entries[key]
	g.mu.Unlock()
	if !ok || ent.c.Entry(ent.id).Valid() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.entries[key] == ent { // else another registration freed it meanwhile
		g.freeLocked(key)
	}
}

// unregister frees a name that Schedule claimed for a job it could not add.
func (g *registry) unregister(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freeLocked(jobname.Key(name))
}

// freeLocked frees the name whose jobname.Key is key. g.mu must be held.
func (g *registry) freeLocked(key string) {
	delete(g.entries, key)
	delete(g.names, key)
	delete(g.loops, key)
	delete(g.runners, key)
	if sk, ok := g.storeKeys[key]; ok {
		delete(g.storeNames, sk)
		delete(g.storeKeys, key)
	}
}

// JobInfo is one job an executor has registered, as this process sees it.
type JobInfo struct {
	// Name is the job's lock name.
	Name string
	// Next is the job's next fire time here: for a Schedule job its cron
	// schedule's, for a FixedDelay job when its next run is due; zero for a
	// job run by hand (Run, Wrap), or not yet started.
	Next time.Time
	// Running reports whether this process runs the job now.
	Running bool
}

// jobs returns the jobs registered, with their next fire times here;
// running tells whether a name's key runs here now.
func (g *registry) jobs(running func(key string) bool) []JobInfo {
	g.mu.Lock()
	jobs := make([]JobInfo, 0, len(g.names))
	keys := make([]string, 0, len(g.names))
	entries := make([]cronEntry, 0, len(g.names))
	loops := make([]*fixedDelayLoop, 0, len(g.names))
	for key, name := range g.names {
		jobs = append(jobs, JobInfo{Name: name})
		keys = append(keys, key)
		entries = append(entries, g.entries[key])
		loops = append(loops, g.loops[key])
	}
	g.mu.Unlock()
	for i := range jobs { // the cron's lock is taken without g.mu (see freeRemoved)
		switch {
		case entries[i].c != nil:
			jobs[i].Next = entries[i].c.Entry(entries[i].id).Next
		case loops[i] != nil:
			if n := loops[i].next.Load(); n != 0 {
				jobs[i].Next = time.Unix(0, n)
			}
		}
		jobs[i].Running = running(keys[i])
	}
	slices.SortFunc(jobs, func(a, b JobInfo) int { return strings.Compare(a.Name, b.Name) })
	return jobs
}

// runner is how a registered job runs on a run-now request (see
// WithRunNowCheck): its task under its lock, held no longer than it runs.
type runner struct {
	cfg  LockConfig
	task func(context.Context) error
	o    jobOptions
}

// recordRunner remembers how name's job runs on a run-now request.
func (g *registry) recordRunner(name string, r runner) {
	r.cfg.LockAtLeastFor, r.o.catchUp = 0, 0 // an extra run: the next fire time runs as usual
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runners[jobname.Key(name)] = r
}

// requested asks rr, in one call, which registered jobs have run-now
// requests, and returns how to run each once.
func (g *registry) requested(ctx context.Context, rr RunRequester) ([]runner, error) {
	g.mu.Lock()
	names := make([]string, 0, len(g.runners))
	for _, r := range g.runners {
		names = append(names, r.cfg.Name)
	}
	g.mu.Unlock()
	if len(names) == 0 {
		return nil, nil
	}
	pending, err := rr.RunRequests(ctx, names)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var due []runner
	for name, n := range pending {
		if r, ok := g.runners[jobname.Key(name)]; ok && n > 0 {
			due = append(due, r)
		}
	}
	return due, nil
}

// storeKey asks a NameKeyer provider how its store compares name, within the
// acquire timeout: a name the store cannot keep is refused, like a config it
// would refuse. A store that cannot be asked now (not up yet, its table not
// made) is no reason to refuse a job: the name is registered without a key,
// and an attempt on a name that the store finds to be another name's row
// fails with ErrDuplicateName, naming that name. One that did not answer
// within the timeout is not asked again by this executor.
func (g *registry) storeKey(p LockProvider, timeout time.Duration, log *slog.Logger, name string) (string, error) {
	nk, ok := p.(NameKeyer)
	if !ok || g.noNameKeys.Load() {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	key, err := nk.NameKey(ctx, name)
	switch {
	case errors.Is(err, ErrInvalidConfig):
		return "", err
	case err != nil:
		// A store that did not answer in time is not asked again: each
		// registration would wait out the timeout.
		if errors.Is(err, context.DeadlineExceeded) {
			g.noNameKeys.Store(true)
		}
		log.Warn("shedlock: could not ask the store how it compares the lock name; registered without it: "+
			"if the store keeps it in another name's row, its runs fail with ErrDuplicateName", "lock", name, "error", err)
		return "", nil
	}
	return key, nil
}
