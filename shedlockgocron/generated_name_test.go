package shedlockgocron_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A job without gocron.WithName whose function is a closure is named after
// it (main.main.func24.1), a name that changes when the code around it
// changes: old and new pods of a rolling deploy would take different locks.
// The Locker refuses it at the first run, loudly; a named job runs.
func TestLockerRefusesClosureNames(t *testing.T) {
	var logged bytes.Buffer
	locker := newLocker(t, shedlocktest.NewMemoryStore().Provider("pod-a"), time.Hour, 0,
		shedlockgocron.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan error, 1)
	unnamedRan := make(chan struct{}, 1)
	unnamed, err := s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func() { unnamedRan <- struct{}{} }),
		gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) { refused <- err })))
	if err != nil {
		t.Fatal(err)
	}
	namedRan := make(chan struct{})
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func() { close(namedRan) }), gocron.WithName("cleanupJob"))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer func() { _ = s.Shutdown() }()
	select {
	case err := <-refused:
		if !errors.Is(err, shedlock.ErrInvalidConfig) || !strings.Contains(err.Error(), "gocron.WithName") ||
			!strings.Contains(err.Error(), unnamed.Name()) {
			t.Errorf("refusal of %q: %v", unnamed.Name(), err)
		}
	case <-unnamedRan:
		t.Fatalf("the job named %q by gocron ran under that lock", unnamed.Name())
	case <-time.After(10 * time.Second):
		t.Fatal("no run and no refusal within 10 s")
	}
	select {
	case <-namedRan:
	case <-time.After(10 * time.Second):
		t.Fatal("the named job did not run")
	}
	if !strings.Contains(logged.String(), "level=ERROR") || !strings.Contains(logged.String(), "gocron.WithName") {
		t.Errorf("want an error log saying what to do, got %q", logged.String())
	}
}

// Only a closure's generated name is refused: a function's or a method's own
// name stays until it is renamed, and any name given with WithName is the
// user's.
func TestLockerKeepsStableNames(t *testing.T) {
	locker := newLocker(t, shedlocktest.NewMemoryStore().Provider("pod-a"), time.Hour, 0)
	for _, name := range []string{"cleanupJob", "main.cleanup", "github.com/acme/app/jobs.(*Service).Run-fm",
		"reports.func", "func1", "daily.func1x"} {
		l, err := locker.Lock(t.Context(), name)
		if err != nil {
			t.Errorf("%q: %v", name, err)
			continue
		}
		_ = l.Unlock(t.Context())
	}
	for _, name := range []string{"main.main.func24.1", "main.main.func1", "github.com/acme/app.setup.func3.2"} {
		if _, err := locker.Lock(t.Context(), name); !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("%q: want ErrInvalidConfig, got %v", name, err)
		}
	}
}
