package shedlocketcd_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// A provider on an etcd cluster, as a Java ShedLock service with the env
// "orders" would take its locks there.
func ExampleNewProvider() {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"etcd-0:2379", "etcd-1:2379", "etcd-2:2379"},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	provider, err := shedlocketcd.NewProvider(cli, shedlocketcd.WithEnv("orders"), shedlocketcd.WithLockedBy("pod-a"))
	if err != nil {
		log.Fatal(err)
	}
	l, err := provider.TryLock(context.Background(), shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
	switch {
	case errors.Is(err, shedlock.ErrNotAcquired):
		return // another pod runs it
	case err != nil:
		log.Fatal(err)
	}
	defer func() { _ = l.Unlock(context.Background()) }()
	fence, _ := shedlock.FenceOf(l) // the key's revision: pass it with every write the job makes
	_ = fence
}

// Where a CatchUp job's last fire time that succeeded is kept: a key beside
// the lock's, without a lease, its value zero-padded milliseconds since 1970.
func ExampleProvider_FiredKey() {
	provider, err := shedlocketcd.NewProvider(&clientv3.Client{}, shedlocketcd.WithEnv("orders"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(provider.Key("report"))
	fmt.Println(provider.FiredKey("report"))
	// Output:
	// shedlock:orders:report
	// shedlock-fired:orders:report
}
