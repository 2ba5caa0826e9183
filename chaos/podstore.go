package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// podStore is a pod's side of its store: the provider, on the connections that
// faults may cut, and a direct reading of how long a lock has left, for the
// journal.
type podStore struct {
	provider shedlock.LockProvider
	// timeLeft reads, from the store's own clock, how long the lock of job has
	// left: at most the time until its end as of the moment it was asked, so
	// that a journal time taken before the question plus the answer is never
	// after the lock's end. ok is false when there is no lock.
	timeLeft func(ctx context.Context, job string) (left time.Duration, ok bool, err error)
	closers  []func() error
}

func (s *podStore) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// timeLeftSQL reads a lock's time left in microseconds, from the database clock.
// {t} is the lock table.
var timeLeftSQL = map[Store]string{
	// lock_until is a TIMESTAMP: UNIX_TIMESTAMP reads its instant whatever the
	// session's time zone.
	MySQL: "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), " +
		"TIMESTAMPADD(MICROSECOND, ROUND(UNIX_TIMESTAMP(lock_until) * 1000000), '1970-01-01')) FROM {t} WHERE name = ?",
	// lock_until is a TIMESTAMP holding UTC; clock_timestamp is the time of the
	// statement, not of its transaction.
	Postgres: "SELECT (EXTRACT(EPOCH FROM lock_until - (clock_timestamp() AT TIME ZONE 'UTC')) * 1000000)::bigint " +
		"FROM {t} WHERE name = $1",
	SQLite: "SELECT CAST(round((julianday(lock_until) - julianday('now')) * 86400000000.0) AS INTEGER) " +
		"FROM {t} WHERE name = ?",
}

// storeResolution is the coarsest clock among the stores: SQLite's 'now' and
// Redis's PTTL count whole milliseconds. A time left is read less this, so that
// it is never more than what the lock had left.
const storeResolution = time.Millisecond

// openPodStore opens spec's store: one pool or client for the locks (through
// LockDSN, where faults may be) and one direct, for reading the time left.
func openPodStore(spec PodSpec, log *slog.Logger) (*podStore, error) {
	s := &podStore{}
	direct, through := spec.StoreDSN, spec.LockDSN
	if through == "" {
		through = direct
	}
	if spec.Store == Redis {
		dc := redis.NewClient(clientOptions(direct))
		lc := redis.NewClient(clientOptions(through))
		s.closers = append(s.closers, dc.Close, lc.Close)
		p, err := shedlockredis.NewProvider(lc, shedlockredis.WithEnv(spec.Table), shedlockredis.WithLockedBy(spec.Pod))
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		s.provider = p
		s.timeLeft = func(ctx context.Context, job string) (time.Duration, bool, error) {
			ttl, err := dc.PTTL(ctx, p.Key(job)).Result()
			if err != nil {
				return 0, false, err
			}
			// go-redis reports -2 (no key) and -1 (no expiry) as negative durations.
			return ttl - storeResolution, ttl >= 0, nil
		}
		return s, nil
	}
	if spec.Store == Etcd {
		return openEtcdPodStore(s, spec, direct, through)
	}
	lockDB, err := spec.Store.open(through)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, lockDB.Close)
	readDB := lockDB
	if through != direct {
		if readDB, err = spec.Store.open(direct); err != nil {
			return nil, errors.Join(err, s.Close())
		}
		s.closers = append(s.closers, readDB.Close)
	}
	opts := []shedlock.ProviderOption{shedlock.WithTableName(spec.Table), shedlock.WithLogger(log)}
	var closeProvider func() error
	switch spec.Store {
	case MySQL:
		p, perr := shedlock.NewMySQLProvider(lockDB, opts...)
		s.provider, err = p, perr
		closeProvider = func() error { return p.Close() }
	case Postgres:
		p, perr := shedlock.NewPostgresProvider(lockDB, opts...)
		s.provider, err = p, perr
		closeProvider = func() error { return p.Close() }
	case SQLite:
		p, perr := shedlock.NewSQLiteProvider(lockDB, opts...)
		s.provider, err = p, perr
		closeProvider = func() error { return p.Close() }
	default:
		err = fmt.Errorf("chaos: unknown store %q", spec.Store)
	}
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	// Closed first: its prepared statements live on lockDB.
	s.closers = append([]func() error{closeProvider}, s.closers...)
	query := strings.ReplaceAll(timeLeftSQL[spec.Store], "{t}", spec.Table)
	s.timeLeft = func(ctx context.Context, job string) (time.Duration, bool, error) {
		var us int64
		err := readDB.QueryRowContext(ctx, query, job).Scan(&us)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		return time.Duration(us)*time.Microsecond - storeResolution, true, nil
	}
	return s, nil
}

// openEtcdPodStore is openPodStore for etcd: a client for the locks (through
// the proxy, if any) and one direct. The time left is the lease's, which etcd
// reports in whole seconds rounded up: less a second, it is never more than
// what the lock had left.
func openEtcdPodStore(s *podStore, spec PodSpec, direct, through string) (*podStore, error) {
	dc, err := newEtcdClient(direct)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, dc.Close)
	lc, err := newEtcdClient(through)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.closers = append(s.closers, lc.Close)
	p, err := shedlocketcd.NewProvider(lc, shedlocketcd.WithEnv(spec.Table), shedlocketcd.WithLockedBy(spec.Pod))
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.provider = p
	s.timeLeft = func(ctx context.Context, job string) (time.Duration, bool, error) {
		r, err := dc.Get(ctx, p.Key(job))
		if err != nil || len(r.Kvs) == 0 {
			return 0, false, err
		}
		ttl, err := dc.TimeToLive(ctx, clientv3.LeaseID(r.Kvs[0].Lease))
		if err != nil {
			return 0, false, err
		}
		if ttl.TTL < 0 {
			return 0, false, nil // the lease has ended; the key is about to go
		}
		return time.Duration(ttl.TTL)*time.Second - time.Second, true, nil
	}
	return s, nil
}

// newEtcdClient is a client on endpoints (comma-separated URLs) whose dead
// connections are found within seconds.
func newEtcdClient(endpoints string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: time.Second,
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("chaos: etcd client on %s: %w", endpoints, err)
	}
	return c, nil
}

// clientOptions are a pod's Redis client settings: a context's deadline ends a
// command in flight, and a command whose answer a fault lost ends after 3s.
func clientOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 3 * time.Second,
		WriteTimeout: 3 * time.Second, ContextTimeoutEnabled: true}
}
