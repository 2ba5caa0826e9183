package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/migrations"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// The environment that turns this test binary into a pod of the leader
// process test.
const (
	envLeaderPod     = "SHEDLOCK_LEADER_POD"      // the pod's name, unique per process
	envLeaderStore   = "SHEDLOCK_LEADER_STORE"    // MySQL, PostgreSQL, SQLite, Redis
	envLeaderAddr    = "SHEDLOCK_LEADER_ADDR"     // the lock store's DSN, file or address
	envLeaderTable   = "SHEDLOCK_LEADER_TABLE"    // the lock table (Redis: the env); names the data tables too
	envLeaderDataDSN = "SHEDLOCK_LEADER_DATA_DSN" // MariaDB, where the fenced writes go
	envLeaderLease   = "SHEDLOCK_LEADER_LEASE"    // the lease, as time.ParseDuration reads it
	envLeaderRetry   = "SHEDLOCK_LEADER_RETRY"    // the retry period
	leaderGroup      = "group"
)

// leaderPodProvider opens the pod's lock store.
func leaderPodProvider(store, addr, table, pod string) (shedlock.LockProvider, func(), error) {
	switch store {
	case "Redis":
		client := redis.NewClient(&redis.Options{Addr: addr})
		p, err := shedlockredis.NewProvider(client, shedlockredis.WithEnv(table), shedlockredis.WithLockedBy(pod))
		return p, func() { _ = client.Close() }, err
	case "SQLite":
		db, err := sql.Open("sqlite", "file:"+addr+"?"+shedlock.SQLiteDSNParams)
		if err != nil {
			return nil, nil, err
		}
		p, err := shedlock.NewSQLiteProvider(db, shedlock.WithLockedBy(pod))
		return p, func() { _ = db.Close() }, err
	}
	driver := map[string]string{"MySQL": "mysql", "PostgreSQL": "pgx"}[store]
	db, err := sql.Open(driver, addr)
	if err != nil {
		return nil, nil, err
	}
	var p shedlock.LockProvider
	if store == "MySQL" {
		p, err = shedlock.NewMySQLProvider(db, shedlock.WithTableName(table), shedlock.WithLockedBy(pod))
	} else {
		p, err = shedlock.NewPostgresProvider(db, shedlock.WithTableName(table), shedlock.WithLockedBy(pod))
	}
	return p, func() { _ = db.Close() }, err
}

// createSQLiteLockTable makes the SQLite file's lock table, with the fence column.
func createSQLiteLockTable(db *sql.DB) error {
	for _, f := range []string{"0001_create_shedlock.up.sql", "0002_add_fence.up.sql"} {
		b, err := fs.ReadFile(migrations.SQLite, f)
		if err != nil {
			return err
		}
		if _, err := db.Exec(string(b)); err != nil {
			return err
		}
	}
	return nil
}

// leaderPodMain campaigns for the group until SIGTERM (then it stops
// gracefully) or a kill. Every 5 ms, while it leads, it writes its term's
// token into the data row, guarded so that an older token is refused, and
// journals each refused write and each write made from a context that had
// ended: the test wants none of either.
func leaderPodMain() int {
	pod, table := os.Getenv(envLeaderPod), os.Getenv(envLeaderTable)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", pod)
	lease, err1 := time.ParseDuration(os.Getenv(envLeaderLease))
	retry, err2 := time.ParseDuration(os.Getenv(envLeaderRetry))
	if err1 != nil || err2 != nil {
		log.Error("durations", "lease", err1, "retry", err2)
		return 2
	}
	p, closeStore, err := leaderPodProvider(os.Getenv(envLeaderStore), os.Getenv(envLeaderAddr), table, pod)
	if err != nil {
		log.Error("provider", "error", err)
		return 2
	}
	defer closeStore()
	data, err := sql.Open("mysql", os.Getenv(envLeaderDataDSN))
	if err != nil {
		log.Error("open data", "error", err)
		return 2
	}
	defer data.Close()
	journal := func(event string, fence, n int64) {
		if _, err := data.Exec("INSERT INTO "+table+"_journal (pod, event, fence, n) VALUES (?, ?, ?, ?)",
			pod, event, fence, n); err != nil {
			log.Error("journal", "error", err)
		}
	}
	leader, err := shedlock.NewLeader(p, leaderGroup, lease, shedlock.WithLeaderRetryPeriod(retry), shedlock.WithLeaderLogger(log))
	if err != nil {
		log.Error("leader", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	leader.Start()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		asked := time.Now()
		lctx, leading := leader.Context()
		if !leading || ctx.Err() != nil {
			continue
		}
		fence, _ := shedlock.FenceFromContext(lctx)
		endedBefore := lctx.Err() != nil
		// The write's outcome must be known, so it is not cancelled with the term.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(lctx), 5*time.Second)
		res, err := data.ExecContext(wctx, "UPDATE "+table+"_data SET fence = ?, writer = ?, writes = writes + 1 "+
			"WHERE id = 1 AND fence <= ?", fence, pod, fence)
		cancel()
		if err != nil {
			log.Error("write", "error", err)
			continue
		}
		n, _ := res.RowsAffected()
		if n == 0 {
			journal("refused", fence, time.Since(asked).Microseconds())
		}
		if endedBefore && n == 1 {
			journal("late", fence, n)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := leader.Stop(sctx); err != nil {
		log.Error("stop", "error", err)
		return 1
	}
	return 0
}

// leaderPodEnv is the environment of one pod.
func leaderPodEnv(pod, store, addr, table, dataDSN string, lease, retry time.Duration) []string {
	return append(os.Environ(), envLeaderPod+"="+pod, envLeaderStore+"="+store, envLeaderAddr+"="+addr,
		envLeaderTable+"="+table, envLeaderDataDSN+"="+dataDSN,
		envLeaderLease+"="+lease.String(), envLeaderRetry+"="+retry.String())
}

// leaderKills is how many times the leader is killed or stopped per store:
// SHEDLOCK_LEADER_KILLS, else a few for the normal run.
func leaderKills() (int, error) {
	s := os.Getenv("SHEDLOCK_LEADER_KILLS")
	if s == "" {
		return 3, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("SHEDLOCK_LEADER_KILLS=%q: want a count > 0", s)
	}
	return n, nil
}
