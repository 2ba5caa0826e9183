package topology_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// exclusion counts, per lock, the tasks inside it: any count above one is an
// overlap, two pods holding one lock at once.
type exclusion struct {
	mu       sync.Mutex
	held     map[string]int
	overlaps int
	entered  int
}

func newExclusion() *exclusion { return &exclusion{held: map[string]int{}} }

func (e *exclusion) enter(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held[key]++
	e.entered++
	if e.held[key] > 1 {
		e.overlaps++
	}
}

func (e *exclusion) leave(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held[key]--
}

func (e *exclusion) counts() (entered, overlaps int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.entered, e.overlaps
}

// errorTally counts errors by kind and keeps the first few of each.
type errorTally struct {
	mu      sync.Mutex
	n       map[string]int
	samples map[string][]string
}

func newErrorTally() *errorTally {
	return &errorTally{n: map[string]int{}, samples: map[string][]string{}}
}

func (e *errorTally) add(kind string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n[kind]++
	if len(e.samples[kind]) < 3 {
		e.samples[kind] = append(e.samples[kind], err.Error())
	}
}

func (e *errorTally) count(kind string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[kind]
}

func (e *errorTally) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for kind, n := range e.n {
		fmt.Fprintf(&b, "\n  %s: %d, e.g. %q", kind, n, e.samples[kind])
	}
	return b.String()
}

// levelCounter is a slog handler that counts the records at each level and
// keeps the first few ERROR messages.
type levelCounter struct {
	mu     sync.Mutex
	n      map[slog.Level]int
	errors []string
}

func newLevelCounter() *levelCounter { return &levelCounter{n: map[slog.Level]int{}} }

func (c *levelCounter) Enabled(context.Context, slog.Level) bool { return true }

func (c *levelCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Level]++
	if r.Level >= slog.LevelError && len(c.errors) < 3 {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		c.errors = append(c.errors, b.String())
	}
	return nil
}

func (c *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *levelCounter) WithGroup(string) slog.Handler      { return c }

func (c *levelCounter) count(l slog.Level) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[l]
}

func (c *levelCounter) firstErrors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errors...)
}

func (c *levelCounter) logger() *slog.Logger { return slog.New(c) }
