package shop

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock"
)

// The article's schedules: @Scheduled(fixedDelay) and @SchedulerLock values.
const (
	CancelEvery          = 60 * time.Second
	CancelLockAtMostFor  = 10 * time.Minute
	CancelLockAtLeastFor = 30 * time.Second
	OutboxEvery          = 5 * time.Second
	OutboxLockAtMostFor  = 5 * time.Minute
	OutboxLockAtLeastFor = 4 * time.Second
)

// Schedule registers both jobs on ex with the article's names and durations,
// each divided by speedup (1: the article's values). The outbox job runs with
// keep-alive: the article's outbox poll has no upper bound once the broker
// slows, and LockAtMostFor is only a guess at it; its lock is extended while a
// poll runs, so a slow poll is never joined by a second one.
func Schedule(ex *shedlock.Executor, j *Jobs, speedup float64) error {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speedup) }
	if err := ex.FixedDelay(shedlock.LockConfig{
		Name: CancelJobName, LockAtMostFor: scale(CancelLockAtMostFor), LockAtLeastFor: scale(CancelLockAtLeastFor),
	}, scale(CancelEvery), j.CancelExpiredOrders); err != nil {
		return err
	}
	return ex.FixedDelay(shedlock.LockConfig{
		Name: OutboxJobName, LockAtMostFor: scale(OutboxLockAtMostFor), LockAtLeastFor: scale(OutboxLockAtLeastFor),
	}, scale(OutboxEvery), j.PollOutbox, shedlock.KeepAlive(true))
}

// NoLock is a LockProvider that grants every lock at once: the service as it
// runs without shedlock, every pod running every job.
type NoLock struct{}

// TryLock always succeeds.
func (NoLock) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	return noLock{}, nil
}

type noLock struct{}

func (noLock) Unlock(context.Context) error                               { return nil }
func (noLock) Extend(context.Context, time.Duration, time.Duration) error { return nil }
