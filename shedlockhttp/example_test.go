package shedlockhttp_test

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// A service mounts the dashboard on its own mux, under a prefix of its
// choosing, with a Recorder on its executor, and lets its operators act.
func ExampleNewHandler() {
	mount := func(mux *http.ServeMux, provider *shedlock.MySQLProvider, isOperator func(*http.Request) bool) error {
		rec := shedlockhttp.NewRecorder()
		ex := shedlock.NewExecutor(provider, shedlock.WithListener(rec))
		err := ex.FixedDelay(shedlock.LockConfig{Name: "outboxPoll", LockAtMostFor: time.Minute}, 5*time.Second,
			func(ctx context.Context) error { return nil })
		if err != nil {
			return err
		}
		ex.Start()
		mux.Handle("/ops/locks/", http.StripPrefix("/ops/locks", shedlockhttp.NewHandler(provider,
			shedlockhttp.WithRecorder(rec),
			shedlockhttp.WithTitle("orders"),
			shedlockhttp.WithAuthorize(func(r *http.Request, a shedlockhttp.Action) error {
				if !isOperator(r) { // the service's own authentication
					return errors.New("operators only")
				}
				return nil
			}),
		)))
		return nil
	}
	_ = mount
}
