package shedlockhttp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock"
)

// lockView is one lock as the page and api/locks show it.
type lockView struct {
	Name        string    `json:"name"`
	Held        bool      `json:"held"`
	TimeLeftMS  int64     `json:"time_left_ms"`
	LockUntil   time.Time `json:"lock_until,omitzero"`
	LockedAt    time.Time `json:"locked_at,omitzero"`
	LockedBy    string    `json:"locked_by"`
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	RunRequests int64     `json:"run_requests"`
	// LastSuccess is the last fire time a CatchUp run succeeded at, where the
	// store records it.
	LastSuccess time.Time `json:"last_success,omitzero"`
	// Leader marks a leader's lease; Fence is its term's fencing token when
	// a Leader of this process holds it.
	Leader bool  `json:"leader,omitempty"`
	Fence  int64 `json:"fence,omitempty"`
	// Next is the job's next fire time in this process, if it runs it here.
	Next time.Time `json:"next,omitzero"`
	// Mine reports that this process is a holder of the name now (a run or a
	// term under way here).
	Mine bool `json:"mine,omitempty"`
}

// newLockView is l as shown; a lock held with no end (a Redis key someone
// made without a time to live) has TimeLeftMS -1.
func newLockView(l shedlock.LockInfo) lockView {
	left := l.TimeLeft.Milliseconds()
	if l.TimeLeft < 0 {
		left = -1
	}
	return lockView{Name: l.Name, Held: l.Held, TimeLeftMS: left, LockUntil: l.LockUntil,
		LockedAt: l.LockedAt, LockedBy: l.LockedBy, Paused: l.Paused, PausedUntil: l.PausedUntil,
		RunRequests: l.RunRequests}
}

// lockQuery is which locks a request asks for: those whose name or holder
// contains Q (case folded), in State, from Offset, at most Limit (0: all).
type lockQuery struct {
	Q      string
	State  string // "", held, paused, pending
	Offset int
	Limit  int
}

// lockPage is one page of the locks, and what the whole table counts.
type lockPage struct {
	Total    int        `json:"total"`
	Held     int        `json:"held"`
	Paused   int        `json:"paused"`
	Pending  int        `json:"pending"`
	Matching int        `json:"matching"`
	Offset   int        `json:"offset"`
	Locks    []lockView `json:"locks"`
}

func (q lockQuery) match(l *shedlock.LockInfo, fold string) bool {
	switch q.State {
	case "held":
		if !l.Held {
			return false
		}
	case "paused":
		if !l.Paused {
			return false
		}
	case "pending":
		if l.RunRequests == 0 {
			return false
		}
	}
	return fold == "" || containsFold(l.Name, fold) || containsFold(l.LockedBy, fold)
}

// containsFold reports whether s contains sub (already lower case), ignoring
// case: ASCII without allocating, which 10,000 names a refresh need.
func containsFold(s, sub string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.Contains(strings.ToLower(s), sub)
		}
	}
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// pageOf counts locks and cuts the page q asks for.
func pageOf(locks []shedlock.LockInfo, q lockQuery) lockPage {
	p := lockPage{Total: len(locks), Offset: q.Offset}
	fold := strings.ToLower(q.Q)
	for i := range locks {
		l := &locks[i]
		if l.Held {
			p.Held++
		}
		if l.Paused {
			p.Paused++
		}
		if l.RunRequests > 0 {
			p.Pending++
		}
		if !q.match(l, fold) {
			continue
		}
		if p.Matching >= q.Offset && (q.Limit == 0 || len(p.Locks) < q.Limit) {
			p.Locks = append(p.Locks, newLockView(*l))
		}
		p.Matching++
	}
	return p
}

// lastFires reads and caches the last fire times a store records (a
// shedlock.FireLocker), one statement a name: only for the locks shown, and
// each at most once a refresh period.
type lastFires struct {
	reader interface {
		LastFire(ctx context.Context, name string) (time.Time, bool, error)
	}
	ttl  time.Duration
	mu   sync.Mutex
	none bool // the store keeps none (ErrUnsafeStore: a table without the column)
	seen map[string]fireSeen
}

type fireSeen struct {
	at   time.Time
	fire time.Time
}

// maxCachedFires bounds the cache: it is emptied when it grows past this.
const maxCachedFires = 20000

func newLastFires(admin shedlock.Admin, ttl time.Duration) *lastFires {
	f := &lastFires{ttl: ttl, seen: map[string]fireSeen{}}
	if r, ok := admin.(shedlock.FireLocker); ok {
		f.reader = r
	}
	return f
}

// fill sets LastSuccess on each of locks; a store's error leaves them as
// they are and is returned.
func (f *lastFires) fill(ctx context.Context, locks []lockView) error {
	if f.reader == nil {
		return nil
	}
	now := time.Now()
	for i := range locks {
		fire, err := f.get(ctx, locks[i].Name, now)
		if err != nil {
			return err
		}
		locks[i].LastSuccess = fire
	}
	return nil
}

func (f *lastFires) get(ctx context.Context, name string, now time.Time) (time.Time, error) {
	f.mu.Lock()
	s, ok := f.seen[name]
	none := f.none
	f.mu.Unlock()
	if none {
		return time.Time{}, nil
	}
	if ok && now.Sub(s.at) < f.ttl {
		return s.fire, nil
	}
	fire, _, err := f.reader.LastFire(ctx, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case errors.Is(err, shedlock.ErrUnsafeStore):
		f.none = true
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, err
	}
	if len(f.seen) >= maxCachedFires {
		clear(f.seen)
	}
	f.seen[name] = fireSeen{at: now, fire: fire}
	return fire, nil
}
