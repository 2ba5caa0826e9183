package shedlocketcd

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
)

// control returns a job's Control at now from its paused key and RunsKey,
// either nil when absent. A pause whose end has passed on this process's
// clock is over, as the acquiring transactions compare it, though its key
// waits for its lease.
func control(paused, runsKV *mvccpb.KeyValue, now time.Time) (shedlock.Control, error) {
	var c shedlock.Control
	if paused != nil && string(paused.Value) >= pauseEndedAt(now) {
		c.Paused = true
		if v := string(paused.Value); v != pausedForever {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return c, fmt.Errorf("shedlock: %s holds %q, not milliseconds since 1970", paused.Key, v)
			}
			c.PausedUntil = time.UnixMilli(ms).UTC()
		}
	}
	if runsKV != nil {
		r, err := parseRuns(runsKV)
		if err != nil {
			return c, fmt.Errorf("shedlock: %w", err)
		}
		c.RunRequests = max(r.n, 0)
	}
	return c, nil
}

// readNames reads, in one request, the keys of the given kind of every name
// (prefix true: each of the three, a prefix) or of one: the lock's key, its
// paused key and its RunsKey, by name.
func (p *Provider) readNames(ctx context.Context, name string, prefix bool) (locks, paused, runs map[string]*mvccpb.KeyValue, err error) {
	var opts []clientv3.OpOption
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	bases := []string{p.Key(""), p.PausedKey(""), p.RunsKey("")}
	ops := make([]clientv3.Op, len(bases))
	for i, b := range bases {
		ops[i] = clientv3.OpGet(b+name, opts...)
	}
	resp, err := p.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, nil, nil, err
	}
	byName := make([]map[string]*mvccpb.KeyValue, len(bases))
	for i, b := range bases {
		byName[i] = map[string]*mvccpb.KeyValue{}
		for _, kv := range resp.Responses[i].GetResponseRange().GetKvs() {
			byName[i][strings.TrimPrefix(string(kv.Key), b)] = kv
		}
	}
	return byName[0], byName[1], byName[2], nil
}

// lockInfos returns the locks of what readNames read, by name: each held
// lock, and each name paused or with run requests, held or not.
func (p *Provider) lockInfos(ctx context.Context, locks, paused, runs map[string]*mvccpb.KeyValue) ([]shedlock.LockInfo, error) {
	now := time.Now()
	names := make([]string, 0, len(locks)+len(paused)+len(runs))
	for _, m := range []map[string]*mvccpb.KeyValue{locks, paused, runs} {
		for name := range m {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	infos := make([]shedlock.LockInfo, 0, len(names))
	for _, name := range slices.Compact(names) {
		c, err := control(paused[name], runs[name], now)
		if err != nil {
			return nil, err
		}
		info := shedlock.LockInfo{Name: name}
		if kv := locks[name]; kv != nil {
			if info, err = p.info(ctx, kv); err != nil {
				return nil, err
			}
		} else if c == (shedlock.Control{}) {
			continue // a pause ended, or every request run: nothing to show
		}
		info.Control = c
		infos = append(infos, info)
	}
	return infos, nil
}
