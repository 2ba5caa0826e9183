package chaos

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the journal is in MySQL/MariaDB
)

// The environment that turns a process into a pod: the supervisor re-runs its own
// binary (a program or a test binary) with these set.
const (
	envPod      = "SHEDLOCK_CHAOS_POD"
	envDSN      = "SHEDLOCK_CHAOS_DSN"
	envStore    = "SHEDLOCK_CHAOS_STORE"
	envStoreDSN = "SHEDLOCK_CHAOS_STORE_DSN"
	envLockDSN  = "SHEDLOCK_CHAOS_LOCK_DSN"
	envTable    = "SHEDLOCK_CHAOS_TABLE"
	envJournal  = "SHEDLOCK_CHAOS_JOURNAL"
	envParams   = "SHEDLOCK_CHAOS_PARAMS"
)

// PodSpec is what a pod process needs to know.
type PodSpec struct {
	Params
	DSN     string // the journal's MySQL/MariaDB
	Journal string // the journal table
	Pod     string
	Store   Store // where locks are taken; "": MySQL
	// StoreDSN reaches the store directly (see Store for its form); "" with
	// MySQL: DSN.
	StoreDSN string
	LockDSN  string // the store as the locks reach it, through faults; "": StoreDSN
	Table    string // the lock table, or for Redis the env of the keys
}

// Env returns the environment entries that make a process run spec.
func (s PodSpec) Env() []string {
	return []string{
		envPod + "=" + s.Pod, envDSN + "=" + s.DSN, envStore + "=" + string(s.Store), envStoreDSN + "=" + s.StoreDSN,
		envLockDSN + "=" + s.LockDSN, envTable + "=" + s.Table, envJournal + "=" + s.Journal,
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
	store, err := openPodStore(spec, log)
	if err != nil {
		log.Error("open lock store", "store", spec.Store, "error", err)
		return 2
	}
	defer store.Close()
	err = RunPod(ctx, PodConfig{Params: spec.Params, Provider: store.provider, TimeLeft: store.timeLeft,
		DB: db, Journal: spec.Journal, Pod: spec.Pod, Log: log})
	if err != nil {
		log.Error("pod failed", "error", err)
		return 1
	}
	return 0
}

func specFromEnv() (PodSpec, error) {
	s := PodSpec{DSN: os.Getenv(envDSN), StoreDSN: os.Getenv(envStoreDSN), LockDSN: os.Getenv(envLockDSN),
		Table: os.Getenv(envTable), Journal: os.Getenv(envJournal), Pod: os.Getenv(envPod)}
	store, err := ParseStore(cmp.Or(os.Getenv(envStore), string(MySQL)))
	if err != nil {
		return s, err
	}
	s.Store = store
	if s.StoreDSN == "" && s.Store == MySQL {
		s.StoreDSN = s.DSN
	}
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
	if s.DSN == "" || s.StoreDSN == "" || s.Table == "" || s.Journal == "" {
		return s, fmt.Errorf("%s, %s, %s and %s must be set", envDSN, envStoreDSN, envTable, envJournal)
	}
	return s, nil
}
