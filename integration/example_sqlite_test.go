package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
)

// Two providers on one database file, as two pods would have: the second is
// refused while the first holds the lock, and gets it once LockAtLeastFor has
// passed after the release.
func ExampleNewSQLiteProvider() {
	dir, _ := os.MkdirTemp("", "shedlock-example")
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "app.db") + "?" + shedlock.SQLiteDSNParams

	ctx := context.Background()
	podA, _ := sql.Open("sqlite", dsn)
	defer podA.Close()
	podB, _ := sql.Open("sqlite", dsn)
	defer podB.Close()

	a, err := shedlock.NewSQLiteProvider(podA)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := a.EnsureTable(ctx); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := shedlock.NewSQLiteProvider(podB)

	cfg := shedlock.LockConfig{Name: "outboxPollingJob", LockAtMostFor: 5 * time.Minute, LockAtLeastFor: 200 * time.Millisecond}
	lock, err := a.TryLock(ctx, cfg)
	fmt.Println("pod A acquired:", err == nil)

	_, err = b.TryLock(ctx, cfg)
	fmt.Println("pod B refused:", errors.Is(err, shedlock.ErrNotAcquired))

	_ = lock.Unlock(ctx) // held until 200ms after it was taken
	_, err = b.TryLock(ctx, cfg)
	fmt.Println("pod B refused right after the release:", errors.Is(err, shedlock.ErrNotAcquired))

	time.Sleep(250 * time.Millisecond) // let LockAtLeastFor pass
	_, err = b.TryLock(ctx, cfg)
	fmt.Println("pod B acquired after LockAtLeastFor:", err == nil)
	// Output:
	// pod A acquired: true
	// pod B refused: true
	// pod B refused right after the release: true
	// pod B acquired after LockAtLeastFor: true
}

// The executor runs a task only on the instance that got the lock.
func ExampleSQLiteProvider_executor() {
	dir, _ := os.MkdirTemp("", "shedlock-example")
	defer os.RemoveAll(dir)
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?"+shedlock.SQLiteDSNParams)
	defer db.Close()

	ctx := context.Background()
	p, _ := shedlock.NewSQLiteProvider(db)
	if err := p.EnsureTable(ctx); err != nil {
		fmt.Println(err)
		return
	}
	ex := shedlock.NewExecutor(p)
	cfg := shedlock.LockConfig{Name: "orderTimeoutCancelJob", LockAtMostFor: 10 * time.Minute, LockAtLeastFor: 30 * time.Second}
	for i := range 2 {
		ran, err := ex.Run(ctx, cfg, func(ctx context.Context) error { return nil })
		fmt.Printf("run %d: ran=%v err=%v\n", i+1, ran, err)
	}
	// Output:
	// run 1: ran=true err=<nil>
	// run 2: ran=false err=<nil>
}
