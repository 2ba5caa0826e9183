package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// The environment of a catch-up pod process (see catchUpPodMain).
const (
	envCatchUpPod     = "SHEDLOCK_CATCHUP_POD"     // the pod's name
	envCatchUpStore   = "SHEDLOCK_CATCHUP_STORE"   // MySQL, PostgreSQL, SQLite, Redis
	envCatchUpAddr    = "SHEDLOCK_CATCHUP_ADDR"    // the store's DSN, file or address
	envCatchUpTable   = "SHEDLOCK_CATCHUP_TABLE"   // the lock table (Redis: the env)
	envCatchUpJournal = "SHEDLOCK_CATCHUP_JOURNAL" // the file each pod appends "up|start|done <pod> <unix nanos>" to
	envCatchUpWork    = "SHEDLOCK_CATCHUP_WORK"    // how long a run works

	catchUpMostFor = 2 * time.Second
	catchUpRetry   = 300 * time.Millisecond
)

// catchUpPodMain runs an hourly CatchUp job, whose last hour's fire time is
// due at start, until SIGTERM or a kill; each run journals its start and, once
// it has worked, its end.
func catchUpPodMain() int {
	pod := os.Getenv(envCatchUpPod)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", pod)
	work, err := time.ParseDuration(os.Getenv(envCatchUpWork))
	if err != nil {
		log.Error("work", "error", err)
		return 2
	}
	p, closeStore, err := leaderPodProvider(os.Getenv(envCatchUpStore), os.Getenv(envCatchUpAddr), os.Getenv(envCatchUpTable), pod)
	if err != nil {
		log.Error("provider", "error", err)
		return 2
	}
	defer closeStore()
	journal, err := os.OpenFile(os.Getenv(envCatchUpJournal), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		log.Error("journal", "error", err)
		return 2
	}
	defer journal.Close()
	note := func(what string) {
		_, _ = fmt.Fprintf(journal, "%s %s %d\n", what, pod, time.Now().UnixNano()) // one write: appended whole
	}
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(log))
	c := cron.New(cron.WithSeconds())
	_, err = ex.Schedule(c, "0 0 * * * *", shedlock.LockConfig{Name: "killed", LockAtMostFor: catchUpMostFor},
		func(ctx context.Context) error {
			note("start")
			t := time.NewTimer(work)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-t.C:
			}
			note("done")
			return nil
		}, shedlock.CatchUp(2*time.Hour), shedlock.CatchUpRetry(catchUpRetry))
	if err != nil {
		log.Error("schedule", "error", err)
		return 2
	}
	c.Start()
	note("up")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	<-c.Stop().Done()
	_ = ex.Stop(context.Background())
	return 0
}

// journalLine is one line of the pods' journal.
type journalLine struct {
	what, pod string
	at        time.Time
}

func readJournal(t *testing.T, file string) []journalLine {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var out []journalLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.Len(t, fields, 3, "journal line %q", sc.Text())
		n, err := strconv.ParseInt(fields[2], 10, 64)
		require.NoError(t, err)
		out = append(out, journalLine{fields[0], fields[1], time.Unix(0, n)})
	}
	require.NoError(t, sc.Err())
	return out
}

// awaitJournal polls the journal, with a deadline, until a line of what by pod.
func awaitJournal(t *testing.T, file, what, pod string, within time.Duration) journalLine {
	deadline := time.Now().Add(within)
	for {
		for _, l := range readJournal(t, file) {
			if l.what == what && l.pod == pod {
				return l
			}
		}
		require.True(t, time.Now().Before(deadline), "no %q by %s within %v", what, pod, within)
		time.Sleep(5 * time.Millisecond) // a poll with a deadline
	}
}

// A catch-up run SIGKILLed mid-run is run again by another pod once its
// LockAtMostFor has passed, within the retry delay; the runs do not overlap,
// and the fire time succeeds once.
func TestCatchUpKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	t.Parallel()
	stores := map[string]func(t *testing.T) (addr, table string){
		"MySQL": func(t *testing.T) (string, string) {
			return testdb.MySQLDSN(t), testdb.NewCatchUpTable(t, testdb.Open(t, nil))
		},
		"PostgreSQL": func(t *testing.T) (string, string) {
			return testdb.PostgresDSN(t), testdb.NewCatchUpPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
		},
		"SQLite": func(t *testing.T) (string, string) {
			file := filepath.Join(t.TempDir(), "locks.db")
			require.NoError(t, newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams)).EnsureTable(context.Background()))
			return file, "shedlock"
		},
		"Redis": func(t *testing.T) (string, string) {
			return testdb.RedisAddr(t), fmt.Sprintf("catchup_kill_%d", time.Now().UnixNano())
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, table := store(t)
			journal := filepath.Join(t.TempDir(), "journal")
			require.NoError(t, os.WriteFile(journal, nil, 0o600))
			start := func(pod string, work time.Duration) *exec.Cmd {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), envCatchUpPod+"="+pod, envCatchUpStore+"="+name, envCatchUpAddr+"="+addr,
					envCatchUpTable+"="+table, envCatchUpJournal+"="+journal, envCatchUpWork+"="+work.String())
				f, err := os.Create(filepath.Join(t.TempDir(), pod+".log"))
				require.NoError(t, err)
				cmd.Stdout, cmd.Stderr = f, f
				require.NoError(t, cmd.Start())
				t.Cleanup(func() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					_ = f.Close()
					if t.Failed() {
						out, _ := os.ReadFile(f.Name())
						t.Logf("%s's log:\n%s", pod, out)
					}
				})
				return cmd
			}
			// pod1 takes the last hour's fire time at start, and works past any test.
			pod1 := start("pod1", time.Hour)
			awaitJournal(t, journal, "start", "pod1", 30*time.Second)
			pod2 := start("pod2", 100*time.Millisecond)
			require.NoError(t, pod1.Process.Signal(syscall.SIGKILL))
			killed := time.Now()
			_ = pod1.Wait()
			done := awaitJournal(t, journal, "done", "pod2", 30*time.Second)

			lines := readJournal(t, journal)
			var starts []journalLine
			for _, l := range lines {
				if l.what == "start" {
					starts = append(starts, l)
				}
			}
			require.Len(t, starts, 2, "runs: %v", lines)
			again := starts[1]
			t.Logf("pod2 ran the fire time %v after pod1 was killed (LockAtMostFor %v, retry %v)",
				again.at.Sub(killed).Round(time.Millisecond), catchUpMostFor, catchUpRetry)
			assert.Equal(t, "pod2", again.pod)
			assert.True(t, again.at.After(killed), "pod2 ran while pod1's run was under way")
			// Counted from pod2's start when that came later: on a busy machine a
			// race-built process can take seconds to start, which is not the
			// store's or the retry's doing.
			from := killed
			if up := awaitJournal(t, journal, "up", "pod2", time.Second); up.at.After(from) {
				from = up.at
			}
			assert.Less(t, again.at.Sub(from), catchUpMostFor+catchUpRetry+time.Second,
				"not run again within LockAtMostFor plus the retry delay")

			// Several retry delays more: the fire time that succeeded is not run again.
			wait(3 * catchUpRetry)
			require.NoError(t, pod2.Process.Signal(syscall.SIGTERM))
			_ = pod2.Wait()
			var dones int
			for _, l := range readJournal(t, journal) {
				if l.what == "done" {
					dones++
				}
			}
			assert.Equal(t, 1, dones, "the fire time succeeded %d times", dones)
			assert.True(t, done.at.After(again.at))
		})
	}
}
