package shedlockredis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// A service takes its job locks in the Redis it already has. The keys are Java
// ShedLock's, so Java pods using env "default" take turns with these.
func ExampleNewProvider() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{"127.0.0.1:6379"},
		ContextTimeoutEnabled: true, // a context's deadline also ends a command in flight
	})
	defer client.Close()

	p, err := shedlockredis.NewProvider(client) // sends nothing yet
	if err != nil {
		log.Fatal(err)
	}
	ex := shedlock.NewExecutor(p)
	ran, err := ex.Run(context.Background(),
		shedlock.LockConfig{Name: "cancel-expired-orders", LockAtMostFor: 5 * time.Minute, LockAtLeastFor: 30 * time.Second},
		func(ctx context.Context) error {
			// The job: at most one pod runs it at a time.
			return nil
		})
	log.Println(ran, err)
}
