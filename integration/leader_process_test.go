package integration_test

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

const (
	leaderPods  = 5
	leaderLease = time.Second
	leaderRetry = 100 * time.Millisecond
	// leaderMargin is how long before the lease's end a term's context ends.
	leaderMargin = leaderLease / 10
)

// leaderStore gives the lock store of one run: its address and table (for
// Redis, the env).
type leaderStore func(t *testing.T) (addr, table string)

var leaderStores = map[string]leaderStore{
	"MySQL": func(t *testing.T) (string, string) {
		return testdb.MySQLDSN(t), testdb.NewFencedTable(t, testdb.Open(t, nil))
	},
	"PostgreSQL": func(t *testing.T) (string, string) {
		return testdb.PostgresDSN(t), testdb.NewFencedPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
	},
	"SQLite": func(t *testing.T) (string, string) {
		file := filepath.Join(t.TempDir(), "locks.db")
		require.NoError(t, createSQLiteLockTable(openSQLite(t, file, "")))
		return file, fmt.Sprintf("leader_sqlite_%d", time.Now().UnixNano())
	},
	"Redis": func(t *testing.T) (string, string) {
		return testdb.RedisAddr(t), fmt.Sprintf("leader_redis_%d", time.Now().UnixNano())
	},
}

// leaderGroupRun is five pods of one store, and the data row they write.
type leaderGroupRun struct {
	t                  *testing.T
	store, addr, table string
	data               *sql.DB
	pods               map[string]*exec.Cmd
	started            int
	logs               []string // every pod's log file
}

func (g *leaderGroupRun) start() {
	g.started++
	pod := fmt.Sprintf("pod%d", g.started)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = leaderPodEnv(pod, g.store, g.addr, g.table, testdb.MySQLDSN(g.t), leaderLease, leaderRetry)
	f, err := os.Create(filepath.Join(g.t.TempDir(), pod+".log"))
	require.NoError(g.t, err)
	g.logs = append(g.logs, f.Name())
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(g.t, cmd.Start())
	g.pods[pod] = cmd
	g.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = f.Close()
		if g.t.Failed() {
			out, _ := os.ReadFile(f.Name())
			g.t.Logf("%s's log:\n%s", pod, out)
		}
	})
}

// row reads the data row: the last token written, and by whom.
func (g *leaderGroupRun) row() (fence int64, writer string) {
	require.NoError(g.t, g.data.QueryRow("SELECT fence, writer FROM "+g.table+"_data WHERE id = 1").Scan(&fence, &writer))
	return fence, writer
}

// nextTerm waits until a term after fence has written, and returns it: within,
// and a campaign's bound and a retry more for each campaign that one pod
// logged as unanswered by the store meanwhile.
func (g *leaderGroupRun) nextTerm(after int64, within time.Duration) (fence int64, writer string) {
	start := time.Now()
	deadline := start.Add(within)
	for {
		fence, writer = g.row()
		if fence > after && writer != "" {
			return fence, writer
		}
		if now := time.Now(); !now.Before(deadline) {
			stalled := time.Duration(g.failedCampaigns(start, now)) * campaignCost
			require.True(g.t, now.Before(start.Add(within+stalled)),
				"no new term after token %d within %v (and %v of campaigns unanswered by the store)", after, within, stalled)
		}
		time.Sleep(2 * time.Millisecond) // a poll with a deadline
	}
}

// campaignCost is what a campaign that the store left unanswered costs a pod:
// the attempt's bound, then a retry period.
const campaignCost = leaderLease - leaderMargin + leaderRetry

// failedCampaigns returns the most campaigns that one pod logged as failed
// (the store did not answer within the attempt's bound) between from and to:
// each cost that pod a campaign's bound and a retry before it could try again.
func (g *leaderGroupRun) failedCampaigns(from, to time.Time) int {
	most := 0
	for _, name := range g.logs {
		b, err := os.ReadFile(name)
		require.NoError(g.t, err)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "leader could not campaign") {
				continue
			}
			stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			at, err := time.Parse(time.RFC3339Nano, stamp)
			if err == nil && !at.Before(from) && !at.After(to) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// Five OS processes lead one group; the leader is SIGKILLed, SIGSTOPped past
// its lease, or SIGTERMed (it stops gracefully), in turn. Every leader writes
// its term's token to a row that refuses an older one: no write is refused
// within the margin of its pod's asking whether it leads (no older term acts
// after a newer one began), none lands from a context that had ended, and a
// write paused in flight past the lease is refused by the token. A killed or stopped leader is replaced within its
// lease plus a retry period; a graceful one within a retry period.
func TestLeaderAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	kills, err := leaderKills()
	require.NoError(t, err)
	for _, store := range []string{"MySQL", "PostgreSQL", "SQLite", "Redis"} {
		t.Run(store, func(t *testing.T) { leaderFailovers(t, store, kills) })
	}
}

func leaderFailovers(t *testing.T, store string, kills int) {
	addr, table := leaderStores[store](t)
	data := testdb.Open(t, nil)
	for _, stmt := range []string{
		"CREATE TABLE " + table + "_data (id INT PRIMARY KEY, fence BIGINT NOT NULL, writer VARCHAR(32) NOT NULL, writes BIGINT NOT NULL)",
		"INSERT INTO " + table + "_data VALUES (1, 0, '', 0)",
		"CREATE TABLE " + table + "_journal (at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), pod VARCHAR(32), " +
			"event VARCHAR(16), fence BIGINT, n BIGINT)",
	} {
		_, err := data.Exec(stmt)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_, _ = data.Exec("DROP TABLE IF EXISTS " + table + "_data")
		_, _ = data.Exec("DROP TABLE IF EXISTS " + table + "_journal")
	})
	g := &leaderGroupRun{t: t, store: store, addr: addr, table: table, data: data, pods: map[string]*exec.Cmd{}}
	for range leaderPods {
		g.start()
	}
	fence, writer := g.nextTerm(0, 30*time.Second)
	signals := []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTERM}
	took := map[syscall.Signal][]time.Duration{}
	// stalled: per signal, the most time one failover spent on campaigns that
	// failed for want of an answer from the store, beyond the bound.
	stalled := map[syscall.Signal]time.Duration{}
	for i := range kills {
		sig := signals[i%len(signals)]
		cmd := g.pods[writer]
		require.NotNil(t, cmd, "the row's writer %q is a pod", writer)
		sent := time.Now()
		require.NoError(t, cmd.Process.Signal(sig))
		within := leaderLease + leaderRetry + 5*time.Second
		next, nextWriter := g.nextTerm(fence, within)
		took[sig] = append(took[sig], time.Since(sent))
		stall := time.Duration(g.failedCampaigns(sent, time.Now())) * campaignCost
		stalled[sig] = max(stalled[sig], stall)
		require.NotEqual(t, writer, nextWriter, "the new term is another pod's")
		switch sig {
		case syscall.SIGSTOP: // past its lease: it resumes, a stale leader
			require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
		case syscall.SIGTERM:
			require.NoError(t, cmd.Wait(), "a pod stopped by SIGTERM exits cleanly")
			delete(g.pods, writer)
			g.start()
		default:
			_ = cmd.Wait()
			delete(g.pods, writer)
			g.start()
		}
		fence, writer = next, nextWriter
	}
	// A window of one lease in which the resumed pods would write late, if
	// they would: what is checked is that nothing happens in it.
	window := time.NewTimer(leaderLease)
	<-window.C

	// A refused write is an older term's, sent after a newer term wrote. One
	// that was refused within the margin of asking whether its pod leads is a
	// broken promise: the newer term began while the older pod was told it
	// led. One that took longer was paused or slowed in flight (SIGSTOP
	// between the driver's prepare and execute): the token refused it, as it
	// is there to do.
	var overlaps, fenced, late, writes int
	require.NoError(t, data.QueryRow("SELECT COUNT(CASE WHEN event = 'refused' AND n < ? THEN 1 END), "+
		"COUNT(CASE WHEN event = 'refused' AND n >= ? THEN 1 END), COUNT(CASE WHEN event = 'late' THEN 1 END) FROM "+
		table+"_journal", leaderMargin.Microseconds(), leaderMargin.Microseconds()).Scan(&overlaps, &fenced, &late))
	require.NoError(t, data.QueryRow("SELECT writes FROM "+table+"_data").Scan(&writes))
	rows, err := data.Query("SELECT CAST(at AS CHAR), pod, fence, n FROM " + table + "_journal WHERE event = 'refused'")
	require.NoError(t, err)
	for rows.Next() {
		var at, pod string
		var f, took int64
		require.NoError(t, rows.Scan(&at, &pod, &f, &took))
		t.Logf("refused: %s at %s, token %d, %v after it asked whether it leads", pod, at, f, time.Duration(took)*time.Microsecond)
	}
	require.NoError(t, rows.Close())
	assert.Zero(t, overlaps, "writes refused within the margin: an older term acted after a newer one had")
	assert.Zero(t, late, "writes landed from a context that had ended")
	assert.Positive(t, writes)
	for _, sig := range signals {
		d := took[sig]
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		p50, worst := d[len(d)/2], d[len(d)-1]
		t.Logf("%s: %v x%d: failover p50 %v, max %v (lease %v, retry %v; campaigns unanswered by the store: up to %v); "+
			"%d writes, %d overlaps, %d late, %d stale writes refused by the token",
			store, sig, len(d), p50.Round(time.Millisecond), worst.Round(time.Millisecond), leaderLease, leaderRetry,
			stalled[sig], writes, overlaps, late, fenced)
		bound := leaderLease + leaderRetry
		if sig == syscall.SIGTERM {
			bound = leaderRetry
		}
		// The bound, and the scheduling of 5 processes and the servers on a small
		// machine: 2 s, since in CI runs beside the integration module's other
		// tests statements waited past the 1 s acquire bound (2.4 and 2.5 s
		// failovers); and the campaigns the store left unanswered, which the pods
		// logged (under two CPU hogs, three in a row: a 5.7 s failover). A
		// failover that never comes, or waits out leases while the store
		// answers, still misses it.
		assert.Less(t, worst, bound+2*time.Second+stalled[sig], "%v: failover max", sig)
	}
}
