package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// fireReader is a store that can tell the last fire time a CatchUp job's
// run succeeded at (shedlock.CatchUp).
type fireReader interface {
	LastFire(ctx context.Context, name string) (time.Time, bool, error)
}

// LastFire reads the table's last_success for name; an error wrapping
// shedlock.ErrUnsafeStore when the table has no such column.
func (s *sqlStore) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	fl, ok := s.Admin.(shedlock.FireLocker)
	if !ok {
		return time.Time{}, false, fmt.Errorf("%w: %s records no fire times", shedlock.ErrUnsafeStore, s.Where())
	}
	return fl.LastFire(ctx, name)
}

// LastFire reads the lock's fired key (shedlockredis.FiredKey).
func (s *redisStore) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	key := shedlockredis.FiredKey(s.prefix + name)
	if key == "" {
		return time.Time{}, false, nil
	}
	v, err := s.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read %s: %w", key, err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s holds %q, not milliseconds since 1970", key, v)
	}
	return time.UnixMilli(ms), true, nil
}

// lastFires reads, for each lock, the last fire time its CatchUp run
// succeeded at; nil when the store keeps none (a table without last_success)
// or records none, so that a store without CatchUp jobs lists as before.
func lastFires(ctx context.Context, s store, locks []shedlock.LockInfo) (map[string]time.Time, error) {
	fr, ok := s.(fireReader)
	if !ok {
		return nil, nil
	}
	fires := map[string]time.Time{}
	for _, l := range locks {
		t, ok, err := fr.LastFire(ctx, l.Name)
		if errors.Is(err, shedlock.ErrUnsafeStore) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if ok {
			fires[l.Name] = t
		}
	}
	if len(fires) == 0 {
		return nil, nil
	}
	return fires, nil
}
