package shedlocketcd

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
)

// pauseEnd is the value of a paused key: the pause's end in milliseconds
// since 1970, zero-padded to firedWidth digits so that etcd's comparison of
// values, byte by byte, orders them as times; pausedForever, which no time
// reaches, for a pause until Resume.
const pausedForever = "9999999999999999999"

// encodePauseEnd returns the value of a pause until t (zero: until Resume),
// its milliseconds rounded up: a pause never ends before its time.
func encodePauseEnd(t time.Time) string {
	if t.IsZero() {
		return pausedForever
	}
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return fmt.Sprintf("%0*d", firedWidth, ms)
}

// pauseEndedAt is the value a paused key's is compared with at now: a pause
// whose end is below it has ended.
func pauseEndedAt(now time.Time) string {
	return fmt.Sprintf("%0*d", firedWidth, now.UnixMilli()+1)
}

// whenUnpaused returns the parts of a transaction that runs ops when conds
// hold and name is not paused: its paused key (paused) is absent, or holds
// an end before now. A transaction's comparisons are all required, and one
// on the value of an absent key never holds, so the ended case is a
// transaction nested in the failure branch of the absent case's, which
// reads the paused key when it fails too: still one request. The end is
// compared on this process's clock because a lease is no bound on its own: a
// new cluster leader gives every lease its whole TTL again.
func whenUnpaused(paused string, now time.Time, conds []clientv3.Cmp, ops ...clientv3.Op) (
	cmps []clientv3.Cmp, then, els []clientv3.Op) {
	absent := append(append([]clientv3.Cmp(nil), conds...), clientv3.Compare(clientv3.Version(paused), "=", 0))
	ended := append(append([]clientv3.Cmp(nil), conds...), clientv3.Compare(clientv3.Value(paused), "<", pauseEndedAt(now)))
	return absent, ops, []clientv3.Op{clientv3.OpTxn(ended, ops, []clientv3.Op{clientv3.OpGet(paused)})}
}

// takeUnpaused is TryLock's take: the lock's key put if it is absent and
// name is not paused, in one transaction; shedlock.ErrPaused when the
// transaction found a pause not ended.
func (p *Provider) takeUnpaused(ctx context.Context, name string) take {
	return func(key string, put clientv3.Op) (*clientv3.TxnResponse, bool, error) {
		now := time.Now()
		free := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		cmps, then, els := whenUnpaused(p.PausedKey(name), now, []clientv3.Cmp{free}, put)
		resp, err := p.client.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
		return answer(resp, err, now)
	}
}

// answer reads the answer of a transaction made by whenUnpaused: whether it
// made a put, else shedlock.ErrPaused when it read a pause not ended at now.
func answer(resp *clientv3.TxnResponse, err error, now time.Time) (*clientv3.TxnResponse, bool, error) {
	switch {
	case err != nil:
		return nil, false, err
	case putMade(resp.Responses):
		return resp, true, nil
	case pausedSeen(resp.Responses, pauseEndedAt(now)):
		return resp, false, shedlock.ErrPaused
	}
	return resp, false, nil
}

// putMade reports whether any branch taken in resps, nested ones included,
// made a put.
func putMade(resps []*pb.ResponseOp) bool {
	for _, r := range resps {
		if r.GetResponsePut() != nil {
			return true
		}
		if t := r.GetResponseTxn(); t != nil && putMade(t.Responses) {
			return true
		}
	}
	return false
}

// pausedSeen reports whether resps read a paused key whose end is not below
// ended: the only reads a whenUnpaused transaction makes.
func pausedSeen(resps []*pb.ResponseOp, ended string) bool {
	for _, r := range resps {
		if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 && string(rr.Kvs[0].Value) >= ended {
			return true
		}
		if t := r.GetResponseTxn(); t != nil && pausedSeen(t.Responses, ended) {
			return true
		}
	}
	return false
}
