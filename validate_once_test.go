package shedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// checkedOnly is a store that refuses the checking paths: an executor that
// has checked a config and an Extend's durations itself must take the lock
// and extend it through the checked ones, so that each is checked once.
type checkedOnly struct{ p shedlock.LockProvider }

func (c checkedOnly) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	panic("TryLock checks the config the executor checked already")
}

func (c checkedOnly) TryLockChecked(ctx context.Context, cfg shedlock.LockConfig, ck lockcfg.Checked) (shedlock.Lock, error) {
	l, err := c.p.(interface {
		TryLockChecked(context.Context, shedlock.LockConfig, lockcfg.Checked) (shedlock.Lock, error)
	}).TryLockChecked(ctx, cfg, ck)
	if err != nil {
		return nil, err
	}
	return checkedLock{l}, nil
}

type checkedLock struct{ shedlock.Lock }

func (checkedLock) Extend(context.Context, time.Duration, time.Duration) error {
	panic("Extend checks the durations the executor checked already")
}

func (l checkedLock) ExtendChecked(ctx context.Context, most, least time.Duration, ck lockcfg.Checked) error {
	return l.Lock.(interface {
		ExtendChecked(context.Context, time.Duration, time.Duration, lockcfg.Checked) error
	}).ExtendChecked(ctx, most, least, ck)
}

func TestExecutorChecksAConfigAndAnExtendOnce(t *testing.T) {
	ex := shedlock.NewExecutor(checkedOnly{shedlocktest.NewMemoryStore().Provider("a")})
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute},
		func(ctx context.Context) error {
			l, _ := shedlock.LockFromContext(ctx)
			return l.Extend(ctx, 2*time.Minute, 0)
		})
	if !ran || err != nil {
		t.Fatalf("Run: ran %v, %v", ran, err)
	}
	if _, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "bad"}, func(context.Context) error { return nil }); err == nil {
		t.Fatal("a config without LockAtMostFor ran: the executor's own check is the only one")
	}
}
