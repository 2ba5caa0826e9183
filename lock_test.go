package shedlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

func TestLockConfigValidateBoundaries(t *testing.T) {
	t.Parallel()
	valid := []shedlock.LockConfig{
		{Name: "j", LockAtMostFor: time.Millisecond},
		{Name: "j", LockAtMostFor: time.Minute, LockAtLeastFor: time.Millisecond},
		{Name: strings.Repeat("x", 64), LockAtMostFor: time.Minute},
		{Name: strings.Repeat("주", 64), LockAtMostFor: time.Minute}, // characters, not bytes: VARCHAR(64) utf8mb4
		{Name: "j", LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute},
	}
	for _, c := range valid {
		if err := c.Validate(); err != nil {
			t.Errorf("%q: want valid, got %v", c.Name, err)
		}
	}
	invalid := []shedlock.LockConfig{
		{Name: strings.Repeat("주", 65), LockAtMostFor: time.Minute},
		{Name: "bad\xff", LockAtMostFor: time.Minute},
		{Name: "j", LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute + 1},
		// Durations no store keeps: stored as zero, they would give no exclusion.
		{Name: "j", LockAtMostFor: 600}, // 600 ns, meant as seconds
		{Name: "j", LockAtMostFor: time.Millisecond - 1},
		{Name: "j", LockAtMostFor: time.Minute, LockAtLeastFor: time.Microsecond},
	}
	for _, c := range invalid {
		if err := c.Validate(); !errors.Is(err, shedlock.ErrInvalidConfig) {
			t.Errorf("%q: want ErrInvalidConfig, got %v", c.Name, err)
		}
	}
}
