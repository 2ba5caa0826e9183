package shedlockk8s_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockk8s"
)

// A provider inside a pod: the service account's credentials, the pod's
// namespace and name (from the downward API), and a job run on one pod at a
// time.
func ExampleNewProvider() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	provider, err := shedlockk8s.NewProvider(client, "orders", shedlockk8s.WithLockedBy("orders-7d9f-x2x4q"))
	if err != nil {
		log.Fatal(err)
	}
	ex := shedlock.NewExecutor(provider)
	ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "cancel-expired-orders", LockAtMostFor: 10 * time.Minute},
		func(ctx context.Context) error {
			fence, _ := shedlock.FenceFromContext(ctx) // pass it with every write the job makes
			_ = fence
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if !ran {
		log.Print("another pod runs it")
	}
}

// The Lease that keeps a lock: readable, and unique per env and name.
func ExampleLeaseName() {
	fmt.Println(shedlockk8s.LeaseName("default", "cancel-expired-orders"))
	fmt.Println(shedlockk8s.LeaseName("default", "Outbox Poll (orders)"))
	// Output:
	// shedlock-cancel-expired-orders-cdf05c99aac7
	// shedlock-outbox-poll-orders-2d79122669af
}
