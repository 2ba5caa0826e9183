package browser

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// What the pods write to their journal, one line each: "<what> <job> <pod>
// <unix ns>". An attempt skipped is written as its reason (SkipReason's
// String), a lock that ran out or was lost as its event (lockLostEvents),
// both at the time the executor gave the event.
const (
	jStart       = "start"          // a task began
	jDone        = "done"           // a task ended without error
	jHang        = "hang"           // a task took the hang file and waits to be killed
	jPaused      = "paused"         // SkipPaused: the job is paused
	jHeld        = "held_elsewhere" // SkipHeldElsewhere: another holds the lock
	jRunNowDone  = "run_now_done"   // SkipRunNowDone: a run-now's run found its request run elsewhere
	journalPerms = 0o644
)

// The events by which a run's lock ran out or was lost before its release
// (EventKind's String): such a run no longer excludes others, nor counts for
// its run-now request.
var lockLostEvents = []string{
	shedlock.EventExpired.String(), shedlock.EventLost.String(), shedlock.EventReleaseFailed.String(),
}

// journalWriter appends a pod's lines to the journal every pod of a test
// shares: each line one write of a file opened O_APPEND, so that the lines of
// several processes never mix.
type journalWriter struct {
	mu  sync.Mutex
	f   *os.File
	pod string
}

func openJournal(file, pod string) (*journalWriter, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, journalPerms)
	if err != nil {
		return nil, err
	}
	return &journalWriter{f: f, pod: pod}, nil
}

func (w *journalWriter) note(what, job string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = fmt.Fprintf(w.f, "%s %s %s %d\n", what, job, w.pod, at.UnixNano())
}

func (w *journalWriter) Close() error { return w.f.Close() }

// entry is one line of the journal.
type entry struct {
	what, job, pod string
	at             time.Time
}

// journal reads the file a test's pods write, as it grows: each read parses
// only the lines written since the last.
type journal struct {
	file string
	mu   sync.Mutex
	off  int64   // the bytes read so far
	seen []entry // the lines they hold
}

func newJournal(file string) *journal { return &journal{file: file} }

// read returns every whole line written so far (the last may be being
// written: it waits for the next read).
func (j *journal) read(t *testing.T) []entry {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.Open(j.file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, j.off, 1<<40))
	require.NoError(t, err)
	whole := bytes.LastIndexByte(b, '\n') + 1
	j.off += int64(whole)
	for _, line := range strings.Split(string(b[:whole]), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 4, "journal line %q", line)
		ns, err := strconv.ParseInt(f[3], 10, 64)
		require.NoError(t, err, "journal line %q", line)
		j.seen = append(j.seen, entry{f[0], f[1], f[2], time.Unix(0, ns)})
	}
	return j.seen[:len(j.seen):len(j.seen)] // appended to, never changed: safe to read unlocked
}

// count counts, by pod, the lines of what for job written at since or later.
func (j *journal) count(t *testing.T, what, job string, since time.Time) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range j.read(t) {
		if e.what == what && e.job == job && !e.at.Before(since) {
			out[e.pod]++
		}
	}
	return out
}

// runsSince counts, by pod, the runs of job begun after since.
func (j *journal) runsSince(t *testing.T, job string, since time.Time) map[string]int {
	t.Helper()
	return j.count(t, jStart, job, since)
}

// attemptsSince counts, by pod, the attempts at job begun after since that
// ran it or were skipped (its runs and its skips).
func (j *journal) attemptsSince(t *testing.T, job string, since time.Time) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range j.read(t) {
		if e.job == job && e.what != jDone && e.what != jHang && !e.at.Before(since) {
			out[e.pod]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
