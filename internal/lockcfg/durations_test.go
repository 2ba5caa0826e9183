package lockcfg_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// An Extend checked here says what LockConfig.Validate says of the same
// durations: the stores' Extend and the contract refuse alike.
func TestDurationsAreValidates(t *testing.T) {
	for _, d := range [][2]time.Duration{
		{time.Minute, 0}, {time.Millisecond, time.Millisecond}, {0, 0}, {600, 0},
		{time.Second, -1}, {time.Second, 500 * time.Microsecond}, {time.Second, time.Minute},
	} {
		want := shedlock.LockConfig{Name: "job", LockAtMostFor: d[0], LockAtLeastFor: d[1]}.Validate()
		got := lockcfg.Durations("job", d[0], d[1])
		if (got == nil) != (want == nil) || (got != nil && (got.Error() != want.Error() || !errors.Is(got, shedlock.ErrInvalidConfig))) {
			t.Errorf("Durations(%v, %v) = %v, want %v", d[0], d[1], got, want)
		}
	}
	if lockcfg.MinLockAtMostFor != shedlock.MinLockAtMostFor {
		t.Errorf("MinLockAtMostFor %v, the contract's %v", lockcfg.MinLockAtMostFor, shedlock.MinLockAtMostFor)
	}
}
