package shedlocketcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/kvstore"
)

// runs is a RunsKey as read: the requests not yet run, the fencing token of
// the acquisition that marked one run last, and the key's ModRevision (0 when
// it is absent), which a write compares.
type runs struct {
	n, done, rev int64
}

// String is the key's value.
func (r runs) String() string {
	return strconv.FormatInt(r.n, 10) + " " + strconv.FormatInt(r.done, 10)
}

// parseRuns reads a RunsKey's value.
func parseRuns(kv *mvccpb.KeyValue) (runs, error) {
	n, done, _ := strings.Cut(string(kv.Value), " ")
	r := runs{rev: kv.ModRevision}
	var err1, err2 error
	r.n, err1 = strconv.ParseInt(n, 10, 64)
	if done != "" {
		r.done, err2 = strconv.ParseInt(done, 10, 64)
	}
	if err := errors.Join(err1, err2); err != nil {
		return r, fmt.Errorf("%s holds %q, not \"<requests> <token>\"", kv.Key, kv.Value)
	}
	return r, nil
}

// readRuns reads a RunsKey; zero runs when it is absent.
func (p *Provider) readRuns(ctx context.Context, key string) (runs, error) {
	resp, err := p.client.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return runs{}, err
	}
	return parseRuns(resp.Kvs[0])
}

// RunRequests returns the pending run-now requests of those of names that
// have any, read in one request: every RunsKey of the env.
func (p *Provider) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	out := make(map[string]int64)
	if len(names) == 0 {
		return out, nil
	}
	prefix := p.RunsKey("")
	resp, err := p.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the run requests %s*: %w", prefix, err)
	}
	want := make(map[string]bool, len(names))
	for _, name := range names {
		want[name] = true
	}
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), prefix)
		if !want[name] {
			continue
		}
		r, err := parseRuns(kv)
		if err != nil {
			return nil, fmt.Errorf("shedlock: read the run requests of %q: %w", name, err)
		}
		if r.n > 0 {
			out[name] = r.n
		}
	}
	return out, nil
}

// RunDone marks one of name's run-now requests run, if one is left, while
// held, a lock this package took of name, is still held: not released, not
// past its LockAtMostFor (see CheckHeld), and its key still this
// acquisition's. An error wrapping shedlock.ErrLockLost,
// and nothing marked, when it is not. The mark is a transaction guarded by
// the lock's key, as Extend's, and by the RunsKey's revision read just
// before (read again when another write came between); it records the
// acquisition's fencing token, so that one acquisition marks at most one
// request, however often RunDone is sent for it.
func (p *Provider) RunDone(ctx context.Context, name string, held shedlock.Lock) error {
	l, err := ownLock(name, held)
	if err != nil {
		return err
	}
	key := p.RunsKey(name)
	for {
		// A key kept for LockAtLeastFor after the release is still this
		// acquisition's, and one whose LockAtMostFor has passed may still be
		// on its lease of whole seconds: neither is held by its run.
		if err := l.CheckHeld(); err != nil {
			return fmt.Errorf("%w: run of %q: %w", shedlock.ErrLockLost, name, err)
		}
		r, err := p.readRuns(ctx, key)
		if err != nil {
			return fmt.Errorf("shedlock: mark a run of %q done: %w", name, err)
		}
		if r.done == l.fence {
			return nil // marked by this acquisition already
		}
		marked := r
		var then []clientv3.Op
		if r.n > 0 {
			marked.n, marked.done = r.n-1, l.fence
			then = append(then, clientv3.OpPut(key, marked.String()))
		}
		resp, err := p.client.Txn(ctx).
			If(append(l.ours(), clientv3.Compare(clientv3.ModRevision(key), "=", r.rev))...).
			Then(then...).
			Else(clientv3.OpGet(l.key)).
			Commit()
		if err != nil {
			return fmt.Errorf("shedlock: mark a run of %q done: %w", name, err)
		}
		if resp.Succeeded {
			return nil
		}
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 0 ||
			kvs[0].CreateRevision != l.fence || string(kvs[0].Value) != l.value {
			return fmt.Errorf("%w: run of %q: its lock is no longer held", shedlock.ErrLockLost, name)
		}
		// The RunsKey was written since it was read: read it again.
	}
}

// ownLock returns held as a lock this package took of name.
func ownLock(name string, held shedlock.Lock) (*lock, error) {
	return kvstore.Own("shedlocketcd", name, held, func(l *lock) string { return l.name })
}
