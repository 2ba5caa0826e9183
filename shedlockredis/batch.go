package shedlockredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
)

// TryLockBatch makes one attempt on each of cfgs in one round trip: one Lua
// script, by EVALSHA, that does for each lock what TryLock's script does, in the order of the lock keys. On a Cluster client a
// script may touch only one hash slot, so there is one script per slot, all
// sent in one pipeline, which go-redis sends to each node at once: one round
// trip per node. A Ring's shards are not known to the provider, so on a Ring,
// or a client of another kind, there is one script per lock, in one pipeline.
//
// The results are in the order of cfgs; each lock is what TryLock would have
// returned: a value of its own, its own fencing token, the same Unlock and
// Extend. A config that fails Validate is that entry's Err (wrapping
// shedlock.ErrInvalidConfig) and is not sent; a name that is held is
// ErrNotAcquired. A name given twice is an error for the batch wrapping
// shedlock.ErrInvalidConfig, before any command. The first-use check of the
// server's eviction policy is TryLock's (see checkServer).
//
// An error for the batch means that no result is known: the server could not
// be reached, refused every script (a replica, a server out of memory), or ctx
// ended. A lock taken before that is held until its LockAtMostFor, as with a
// TryLock whose reply was lost. On a Cluster, when only some slots' scripts
// fail, their entries get the error and the others their results.
func (p *Provider) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	return p.tryLockBatch(ctx, cfgs, shedlock.LockConfig.Validate)
}

// TryLockBatchChecked is TryLockBatch on configs the executor has validated
// (lockcfg.Checked, which only this repository's modules can name).
func (p *Provider) TryLockBatchChecked(ctx context.Context, cfgs []shedlock.LockConfig, _ lockcfg.Checked) ([]shedlock.LockResult, error) {
	return p.tryLockBatch(ctx, cfgs, nil)
}

// tryLockBatch is TryLockBatch, each config checked by validate unless it is
// nil.
func (p *Provider) tryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig,
	validate func(shedlock.LockConfig) error) ([]shedlock.LockResult, error) {
	results := make([]shedlock.LockResult, len(cfgs))
	valid := make([]int, 0, len(cfgs))
	seen := make(map[string]struct{}, len(cfgs))
	for i, cfg := range cfgs {
		if _, dup := seen[cfg.Name]; dup {
			return nil, fmt.Errorf("%w: shedlockredis: TryLockBatch: lock %q appears twice in the batch",
				shedlock.ErrInvalidConfig, cfg.Name)
		}
		seen[cfg.Name] = struct{}{}
		if validate != nil {
			if err := validate(cfg); err != nil {
				results[i].Err = err
				continue
			}
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return results, nil
	}
	if err := p.checkServer(ctx); err != nil {
		if errors.Is(err, shedlock.ErrUnsafeStore) {
			return nil, err
		}
		return nil, fmt.Errorf("shedlock: acquire a batch of %d locks: %w", len(valid), err)
	}

	locks := make([]*lock, len(cfgs))
	for _, i := range valid {
		locks[i] = p.newLock(cfgs[i])
	}
	// One order for every provider, as BatchLocker asks. A script runs alone, so
	// Redis cannot deadlock; the order also fixes which slot's script goes first.
	slices.SortFunc(valid, func(a, b int) int { return strings.Compare(locks[a].keys[0], locks[b].keys[0]) })
	scripts := p.batchScripts(valid, locks)
	if err := p.runBatch(ctx, scripts); err != nil {
		return nil, fmt.Errorf("shedlock: acquire a batch of %d locks: %w", len(valid), withContext(ctx, err))
	}
	acquired := time.Now()
	for _, i := range valid {
		locks[i].acquired = acquired
	}
	for _, s := range scripts {
		s.results(locks, results)
	}
	return results, nil
}

// batchScript is one run of batchAcquireScript: the entries of cfgs it takes,
// its KEYS and ARGV, and its reply.
type batchScript struct {
	entries []int // indexes into cfgs
	keys    []string
	args    []any
	cmd     *redis.Cmd
}

// batchScripts splits the locks of valid, in that order, into the scripts the
// client can run: all in one for a single server, one per hash slot for a
// Cluster, one per lock for any other client.
func (p *Provider) batchScripts(valid []int, locks []*lock) []*batchScript {
	var part func(i int) int // which script entry i goes to; -1: a new one
	switch p.client.(type) {
	case *redis.Client:
		part = func(int) int { return 0 }
	case *redis.ClusterClient:
		bySlot := make(map[int]int)
		part = func(i int) int {
			s := slot(locks[i].keys[0]) // the fence key is in the same slot
			n, ok := bySlot[s]
			if !ok {
				n = len(bySlot)
				bySlot[s] = n
			}
			return n
		}
	default:
		next := 0
		part = func(int) int { next++; return next - 1 }
	}
	var scripts []*batchScript
	for _, i := range valid {
		n := part(i)
		if n == len(scripts) {
			scripts = append(scripts, &batchScript{})
		}
		s, l := scripts[n], locks[i]
		s.entries = append(s.entries, i)
		fenced := "0"
		s.keys = append(s.keys, l.keys[0])
		if l.keys[1] != "" { // a name with a fence key has a paused key too
			fenced = "2"
			s.keys = append(s.keys, l.keys[1], l.keys[2])
		}
		s.args = append(s.args, l.set[2], l.set[5], fenced)
	}
	return scripts
}

// runBatch sends every script by EVALSHA in one pipeline, and those whose
// server had not seen the script (NOSCRIPT: a restart, a failover, a new
// node) again by EVAL, in a second; a lone script, as TryLock sends its own. It returns an error only when every
// script failed, or ctx ended: then nothing is known of the batch.
func (p *Provider) runBatch(ctx context.Context, scripts []*batchScript) error {
	if len(scripts) == 1 {
		// Not a pipeline: go-redis (v9.23, measured) drops a connection after a
		// pipeline that got an error reply, NOSCRIPT included, and dials anew.
		s := scripts[0]
		s.cmd = p.batch.Run(ctx, p.client, s.keys, s.args...)
		return s.cmd.Err()
	}
	pipe := p.client.Pipeline()
	for _, s := range scripts {
		s.cmd = p.batch.EvalSha(ctx, pipe, s.keys, s.args...)
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	var again []*batchScript
	for _, s := range scripts {
		if redis.HasErrorPrefix(s.cmd.Err(), "NOSCRIPT") {
			again = append(again, s)
		}
	}
	if len(again) > 0 {
		pipe = p.client.Pipeline()
		for _, s := range again {
			s.cmd = p.batch.Eval(ctx, pipe, s.keys, s.args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	var first error
	failed := 0
	for _, s := range scripts {
		if err := s.cmd.Err(); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed == len(scripts) || (failed > 0 && ctx.Err() != nil) {
		return first
	}
	return nil
}

// results fills the entries of results that s took: a lock, ErrNotAcquired,
// the lock's own error the script replied in its place, or the script's
// error.
func (s *batchScript) results(locks []*lock, results []shedlock.LockResult) {
	replies, err := s.cmd.Slice()
	if err == nil && len(replies) != len(s.entries) {
		err = fmt.Errorf("the batch script returned %d replies for %d locks", len(replies), len(s.entries))
	}
	for n, i := range s.entries {
		l := locks[i]
		if err != nil {
			results[i].Err = fmt.Errorf("shedlock: acquire %q: %w", l.name, err)
			continue
		}
		switch fence := replies[n].(type) {
		case nil:
			results[i].Err = shedlock.ErrNotAcquired
		case int64:
			if fence == pausedReply {
				results[i].Err = shedlock.ErrPaused
				continue
			}
			l.fence = fence
			results[i].Lock = l
		case error: // its own: a fence key that holds no token; the script set nothing of it
			results[i].Err = fmt.Errorf("shedlock: acquire %q: %w", l.name, fence)
		default:
			results[i].Err = fmt.Errorf("shedlock: acquire %q: the batch script returned %T", l.name, fence)
		}
	}
}
