package shedlockredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
)

var (
	_ shedlock.Controller   = (*Provider)(nil)
	_ shedlock.RunRequester = (*Provider)(nil)
)

// Pause refuses every attempt on name's lock, by every provider of this env,
// with shedlock.ErrPaused until until, or until Resume when until is zero:
// it writes name's paused key (PausedKey), which the acquiring scripts read.
// A pause until a time ends by the key's time to live, by the server's clock,
// to the millisecond (rounded up). A lock held when it is paused is extended
// and released as before. A pause that has already ended, and a name whose
// key has a "}" outside a hash tag (it can have no paused key), are errors
// wrapping shedlock.ErrInvalidConfig. Java ShedLock pods do not read the
// pause.
func (p *Provider) Pause(ctx context.Context, name string, until time.Time) error {
	key, err := p.controlKey(name, PausedKey)
	if err != nil {
		return err
	}
	end := "0"
	if !until.IsZero() {
		if !until.After(time.Now()) {
			return fmt.Errorf("%w: pause %q until %v: that time has passed", shedlock.ErrInvalidConfig, name, until)
		}
		end = strconv.FormatInt(millisSince1970(until), 10)
	}
	if err := redis.NewScript(pauseScript).Run(ctx, p.client, []string{key}, end).Err(); err != nil {
		return fmt.Errorf("shedlock: pause %q of %s: %w", name, p.where(), withContext(ctx, err))
	}
	return nil
}

// millisSince1970 returns t in milliseconds since 1970, rounded up: a pause
// never ends before its time.
func millisSince1970(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// Resume ends name's pause, deleting its paused key; a name not paused is no
// error.
func (p *Provider) Resume(ctx context.Context, name string) error {
	key, err := p.controlKey(name, PausedKey)
	if err != nil {
		return err
	}
	if err := p.client.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("shedlock: resume %q of %s: %w", name, p.where(), withContext(ctx, err))
	}
	return nil
}

// RunNow adds one run-now request to name (HINCRBY of field n of its
// RunsKey) and returns how many are pending. Each call is one request; one
// that go-redis sends again after its connection dropped before the answer
// (the client's MaxRetries) may count twice.
func (p *Provider) RunNow(ctx context.Context, name string) (int64, error) {
	key, err := p.controlKey(name, RunsKey)
	if err != nil {
		return 0, err
	}
	n, err := p.client.HIncrBy(ctx, key, runsField, 1).Result()
	if err != nil {
		return 0, fmt.Errorf("shedlock: run %q of %s now: %w", name, p.where(), withContext(ctx, err))
	}
	return n, nil
}

// RunRequests returns the pending run-now requests of those of names that
// have any: one HGET each, in one pipeline (on a Cluster, one round trip per
// node).
func (p *Provider) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	out := make(map[string]int64)
	pipe := p.client.Pipeline()
	reads := make(map[string]*redis.StringCmd, len(names))
	for _, name := range names {
		if key := RunsKey(p.Key(name)); key != "" {
			reads[name] = pipe.HGet(ctx, key, runsField)
		}
	}
	if len(reads) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("shedlock: read the run requests of %s: %w", p.where(), withContext(ctx, err))
	}
	for name, cmd := range reads {
		n, err := cmd.Int64()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, fmt.Errorf("shedlock: read the run requests of %q: %w", name, err)
		case n > 0:
			out[name] = n
		}
	}
	return out, nil
}

// RunDone marks one of name's run-now requests run, if one is left, while
// held, a lock this package took, still holds name's key; an error wrapping
// shedlock.ErrLockLost, and nothing marked, when it does not (released, run
// out, freed, or another's). The check and the mark are one script, which
// records the acquisition that marked: one acquisition marks at most one
// request, however often RunDone is sent for it.
func (p *Provider) RunDone(ctx context.Context, name string, held shedlock.Lock) error {
	l, err := ownLock(name, held)
	if err != nil {
		return err
	}
	key, err := p.controlKey(name, RunsKey)
	if err != nil {
		return nil // no requests can be kept for name: none to mark
	}
	marked, err := redis.NewScript(runDoneScript).Run(ctx, p.client, []string{l.keys[0], key}, l.value).Int64()
	if err != nil {
		return fmt.Errorf("shedlock: mark a run of %q done: %w", name, withContext(ctx, err))
	}
	if marked == runDoneNotHeld {
		return fmt.Errorf("%w: run of %q: its lock is no longer held", shedlock.ErrLockLost, name)
	}
	return nil
}

// ownLock returns held as a lock this package took of name.
func ownLock(name string, held shedlock.Lock) (*lock, error) {
	return kvstore.Own("shedlockredis", name, held, func(l *lock) string { return l.name })
}

// controlKey returns name's key of the kind keyOf makes (PausedKey or
// RunsKey); an error wrapping shedlock.ErrInvalidConfig for a name no lock
// can have, or whose key can have none.
func (p *Provider) controlKey(name string, keyOf func(string) string) (string, error) {
	if err := (shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}).Validate(); err != nil {
		return "", err
	}
	key := keyOf(p.Key(name))
	if key == "" {
		return "", fmt.Errorf("%w: lock %q: a key with a \"}\" but no hash tag has no key beside it to pause or run it",
			shedlock.ErrInvalidConfig, name)
	}
	return key, nil
}
