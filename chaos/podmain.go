package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // pods run against MySQL/MariaDB
)

// The environment that turns a process into a pod: the supervisor re-runs its own
// binary (a program or a test binary) with these set.
const (
	envPod     = "SHEDLOCK_CHAOS_POD"
	envDSN     = "SHEDLOCK_CHAOS_DSN"
	envLockDSN = "SHEDLOCK_CHAOS_LOCK_DSN"
	envTable   = "SHEDLOCK_CHAOS_TABLE"
	envJournal = "SHEDLOCK_CHAOS_JOURNAL"
	envParams  = "SHEDLOCK_CHAOS_PARAMS"
)

// PodSpec is what a pod process needs to know.
type PodSpec struct {
	Params
	DSN, Table, Journal, Pod string
	LockDSN                  string // where locks are taken; "": DSN
}

// Env returns the environment entries that make a process run spec.
func (s PodSpec) Env() []string {
	return []string{
		envPod + "=" + s.Pod, envDSN + "=" + s.DSN, envLockDSN + "=" + s.LockDSN, envTable + "=" + s.Table, envJournal + "=" + s.Journal,
		fmt.Sprintf("%s=%v %v %v %v %v", envParams, s.LockAtMostFor, s.LockAtLeastFor, s.Delay, s.WorkMin, s.WorkMax),
	}
}

// IsPod reports whether this process was started as a pod.
func IsPod() bool { return os.Getenv(envPod) != "" }

// PodMain runs this process as the pod its environment describes, until SIGTERM
// or SIGINT, and returns the exit code.
func PodMain() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).
		With("pod", os.Getenv(envPod), "pid", os.Getpid())
	spec, err := specFromEnv()
	if err != nil {
		log.Error("bad pod environment", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	db, err := sql.Open("mysql", spec.DSN)
	if err != nil {
		log.Error("open database", "error", err)
		return 2
	}
	defer db.Close()
	lockDB := db
	if spec.LockDSN != "" {
		if lockDB, err = sql.Open("mysql", spec.LockDSN); err != nil {
			log.Error("open database", "error", err)
			return 2
		}
		defer lockDB.Close()
	}
	err = RunPod(ctx, PodConfig{Params: spec.Params, LockDB: lockDB, DB: db, Table: spec.Table, Journal: spec.Journal, Pod: spec.Pod, Log: log})
	if err != nil {
		log.Error("pod failed", "error", err)
		return 1
	}
	return 0
}

func specFromEnv() (PodSpec, error) {
	s := PodSpec{DSN: os.Getenv(envDSN), LockDSN: os.Getenv(envLockDSN), Table: os.Getenv(envTable), Journal: os.Getenv(envJournal), Pod: os.Getenv(envPod)}
	var most, least, delay, wmin, wmax string
	if _, err := fmt.Sscan(os.Getenv(envParams), &most, &least, &delay, &wmin, &wmax); err != nil {
		return s, fmt.Errorf("%s: %w", envParams, err)
	}
	for _, f := range []struct {
		dst *time.Duration
		src string
	}{{&s.LockAtMostFor, most}, {&s.LockAtLeastFor, least}, {&s.Delay, delay}, {&s.WorkMin, wmin}, {&s.WorkMax, wmax}} {
		d, err := time.ParseDuration(f.src)
		if err != nil {
			return s, fmt.Errorf("%s: %w", envParams, err)
		}
		*f.dst = d
	}
	if s.DSN == "" || s.Table == "" || s.Journal == "" {
		return s, fmt.Errorf("%s, %s and %s must be set", envDSN, envTable, envJournal)
	}
	return s, nil
}
