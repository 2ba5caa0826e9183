package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// etcdStore is the locks of shedlocketcd (and Java ShedLock's
// EtcdLockProvider) under one env: a key shedlock:<env>:<name> per lock, on a
// lease that is the lock's end. Its Admin is the provider's own.
type etcdStore struct {
	client *clientv3.Client
	p      *shedlocketcd.Provider
	env    string
}

// etcdEndpoints reads etcd://host:2379,host:2380 (etcds:// for TLS) as the
// client's endpoints, and its user and password if given.
func etcdEndpoints(dsn string) (cfg clientv3.Config, err error) {
	scheme, rest, _ := strings.Cut(dsn, "://")
	httpScheme := "http"
	switch strings.ToLower(scheme) {
	case "etcd":
	case "etcds":
		httpScheme = "https"
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return cfg, usageError{fmt.Sprintf("-dsn: not an etcd URL (etcd://host:2379,host:2380): %s", quoteDSN(dsn))}
	}
	if userinfo, hosts, ok := strings.Cut(rest, "@"); ok {
		u, err := url.Parse("x://" + userinfo + "@h")
		if err != nil {
			return cfg, usageError{fmt.Sprintf("-dsn: %s: %v", quoteDSN(dsn), err)}
		}
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
		rest = hosts
	}
	rest, _, _ = strings.Cut(rest, "/")
	for _, h := range strings.Split(rest, ",") {
		if h == "" {
			return cfg, usageError{fmt.Sprintf("-dsn: an empty host in %s", quoteDSN(dsn))}
		}
		cfg.Endpoints = append(cfg.Endpoints, httpScheme+"://"+h)
	}
	return cfg, nil
}

func openEtcd(ctx context.Context, c config) (*etcdStore, error) {
	cfg, err := etcdEndpoints(c.dsn)
	if err != nil {
		return nil, err
	}
	cfg.DialTimeout = c.timeout
	cfg.Logger = zap.NewNop() // the command reports each error once, itself
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	p, err := shedlocketcd.NewProvider(client, shedlocketcd.WithEnv(c.env))
	if err != nil {
		_ = client.Close()
		return nil, usageError{err.Error()}
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := p.HealthCheck(pctx); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("connect to etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return &etcdStore{client: client, p: p, env: c.env}, nil
}

func (s *etcdStore) Close() error  { return s.client.Close() }
func (s *etcdStore) Where() string { return "env " + display(s.env) }

func (s *etcdStore) Migrate(context.Context) error {
	return usageError{"migrate: etcd needs no table; its locks are keys " + s.p.Key("<name>")}
}

func (s *etcdStore) Locks(ctx context.Context) ([]shedlock.LockInfo, error) {
	return s.p.Locks(ctx)
}

func (s *etcdStore) Inspect(ctx context.Context, name string) (shedlock.LockInfo, error) {
	info, err := s.p.Inspect(ctx, name)
	return info, s.notFound(name, err)
}

// notFound says which env an unknown name was looked for in, and that a lock
// nobody holds has no key.
func (s *etcdStore) notFound(name string, err error) error {
	if errors.Is(err, shedlock.ErrLockNotFound) {
		return fmt.Errorf("%w: %q in %s (no key %s: nobody holds it)", shedlock.ErrLockNotFound, name, s.Where(), display(s.p.Key(name)))
	}
	return err
}

func (s *etcdStore) Unlock(ctx context.Context, name string, shown *shedlock.LockInfo) (shedlock.LockInfo, error) {
	if shown == nil {
		info, err := s.p.ForceUnlock(ctx, name)
		return info, s.notFound(name, err)
	}
	seen := *shown
	seen.Name = name
	info, err := s.p.ForceUnlockSeen(ctx, seen)
	if errors.Is(err, shedlock.ErrLockChanged) {
		return info, changedHandsError{info}
	}
	return info, s.notFound(name, err)
}
