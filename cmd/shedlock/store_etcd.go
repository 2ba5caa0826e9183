package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shedlock-go/shedlock/shedlocketcd"
)

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

// openEtcd opens the locks of shedlocketcd (and Java ShedLock's
// EtcdLockProvider) under -env, through the provider's own Admin.
func openEtcd(ctx context.Context, c config, _ bool) (*store, error) {
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
	p, err := shedlocketcd.NewProvider(client, shedlocketcd.WithEnv(c.env), shedlocketcd.WithLockedBy("shedlock-cli"))
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
	return &store{Admin: p, where: "env " + display(c.env), close: client.Close}, nil
}
