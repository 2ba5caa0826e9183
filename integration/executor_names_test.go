package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Names a store's collation takes as one row are one name to the executor: a
// second job under one of them is ErrDuplicateName at registration, whichever way
// each is registered, instead of two jobs that block each other at run time.
func TestDuplicateNamesAsTheStoreSeesThem(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{"job", "JOB"},
		{"job", "job "},              // PAD SPACE: trailing spaces do not count
		{"Job", "jOB   "},            // both
		{"k-job", "\u212a-job"},      // Kelvin sign folds to k
		{"\u01c6-job", "\u01c5-job"}, // dž and Dž
		{"σ-job", "ς-job"},           // final sigma folds with sigma
		{"cafe", "café"},             // accents do not count under general_ci and unicode_ci
		{"Zurich", "zürich"},         // nor with case
		{"job-😀", "job-🎉"},           // utf8mb4_general_ci weighs every emoji alike
	}
	distinct := [][2]string{
		{"job", " job"},  // leading spaces count
		{"job", "job\t"}, // only spaces are padding
		{"job", "jobs"},
		{"job-😀", "job-a"},
	}
	noop := func(context.Context) error { return nil }
	registrations := map[string]func(ex *shedlock.Executor, name string) error{
		"FixedDelay": func(ex *shedlock.Executor, name string) error {
			return ex.FixedDelay(shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, time.Hour, noop)
		},
		"Wrap": func(ex *shedlock.Executor, name string) error {
			_, err := ex.Wrap(shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, cron.FuncJob(func() {}))
			return err
		},
		"Schedule": func(ex *shedlock.Executor, name string) error {
			_, err := ex.Schedule(cron.New(), "@hourly", shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, noop)
			return err
		},
		"WithLock": func(ex *shedlock.Executor, name string) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err, _ = r.(error)
					if err == nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}
			}()
			ex.WithLock(name, time.Minute, 0)
			return nil
		},
	}
	for firstHow, first := range registrations {
		for secondHow, second := range registrations {
			for _, pair := range same {
				ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
				require.NoError(t, first(ex, pair[0]))
				err := second(ex, pair[1])
				assert.ErrorIs(t, err, shedlock.ErrDuplicateName, "%s(%q) then %s(%q)", firstHow, pair[0], secondHow, pair[1])
				assert.ErrorContains(t, err, fmt.Sprintf("%q is %q to the store", pair[1], pair[0]))
			}
			for _, pair := range distinct {
				ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
				require.NoError(t, first(ex, pair[0]))
				assert.NoError(t, second(ex, pair[1]), "%s(%q) then %s(%q)", firstHow, pair[0], secondHow, pair[1])
			}
		}
	}
}

// The rule above follows the documented table: MariaDB takes names differing by
// case or trailing spaces as one row, so another pod's "JOB " waits for "job".
func TestStoreTakesCaseAndTrailingSpacesAsOneName(t *testing.T) {
	t.Parallel()
	newProvider := mysqlStore(nil)(t)
	held, err := newProvider(t).TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	defer held.Unlock(context.Background())
	for _, name := range []string{"JOB", "job ", "Job  "} {
		_, err := newProvider(t).TryLock(context.Background(), shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
		assert.ErrorIs(t, err, shedlock.ErrNotAcquired, "TryLock(%q) while another pod holds %q", name, "job")
	}
}

// Run is not registration, but a run of "JOB" in this process while "job" runs
// here is skipped as a run of the same name would be, whatever the store.
func TestRunSameStoreNameNotTwiceInProcess(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ex.Run(context.Background(), job, func(context.Context) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "JOB ", LockAtMostFor: time.Minute},
		func(context.Context) error { return nil })
	assert.False(t, ran)
	assert.NoError(t, err)
	close(release)
	<-done
}

// A config the provider would refuse on every run (its ConfigChecker says so) is
// refused at registration, and the name stays free for a corrected config.
func TestRegistrationAsksTheProviderToCheckConfig(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(checkingProvider{shedlocktest.NewMemoryStore().Provider("a")})
	tooLong := shedlock.LockConfig{Name: "job", LockAtMostFor: 48 * time.Hour}
	noop := func(context.Context) error { return nil }
	assertRefusesConfig(t, ex, tooLong, "at most 24h")
	ok := tooLong
	ok.LockAtMostFor = time.Hour
	assert.NoError(t, ex.FixedDelay(ok, time.Hour, noop), "the refused config must not have claimed the name")
}

// A MySQL lock_until past 2038 (20 years of LockAtMostFor) cannot be stored:
// registration says so at once instead of failing on every tick.
func TestRegistrationRefusesLockUntilPast2038OnMySQL(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(newMySQLProvider(t, testdb.Open(t, nil)))
	assertRefusesConfig(t, ex, shedlock.LockConfig{Name: "job", LockAtMostFor: 20 * 365 * 24 * time.Hour}, "2038")
	_, err := ex.Wrap(shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute}, cron.FuncJob(func() {}))
	assert.NoError(t, err)
}

func assertRefusesConfig(t *testing.T, ex *shedlock.Executor, cfg shedlock.LockConfig, why string) {
	t.Helper()
	noop := func(context.Context) error { return nil }
	err := ex.FixedDelay(cfg, time.Hour, noop)
	assert.ErrorIs(t, err, shedlock.ErrInvalidConfig, "FixedDelay")
	assert.ErrorContains(t, err, why, "FixedDelay")
	_, err = ex.Wrap(cfg, cron.FuncJob(func() {}))
	assert.ErrorIs(t, err, shedlock.ErrInvalidConfig, "Wrap")
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		ex.WithLock(cfg.Name, cfg.LockAtMostFor, cfg.LockAtLeastFor)
	}()
	err, _ = panicked.(error)
	assert.ErrorIs(t, err, shedlock.ErrInvalidConfig, "WithLock's panic")
}

// checkingProvider refuses, as ConfigChecker, any LockAtMostFor over a day.
type checkingProvider struct{ shedlock.LockProvider }

func (checkingProvider) CheckConfig(cfg shedlock.LockConfig) error {
	if cfg.LockAtMostFor > 24*time.Hour {
		return fmt.Errorf("%w: lock %q: LockAtMostFor at most 24h", shedlock.ErrInvalidConfig, cfg.Name)
	}
	return nil
}
