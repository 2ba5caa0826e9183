package integration_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// openEtcdCatchUp is catchUpStores' etcd: a one-member cluster of the test's
// own (the transactions are the same on three members, where
// integration/etcd's TestCatchUp runs the contract), a client per pod.
func openEtcdCatchUp(t *testing.T) func() (shedlock.LockProvider, func()) {
	c := etcdcluster.New(t, 1)
	env := fmt.Sprintf("catchup_%d", time.Now().UnixNano())
	return func() (shedlock.LockProvider, func()) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
		require.NoError(t, err)
		p, err := shedlocketcd.NewProvider(cli, shedlocketcd.WithEnv(env))
		require.NoError(t, err)
		return p, func() { _ = cli.Close() }
	}
}
