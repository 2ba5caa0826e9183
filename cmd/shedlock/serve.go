package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// minTokenLen is the shortest -token taken: a secret an attacker cannot
// guess over the network.
const minTokenLen = 16

// serve serves the dashboard of the store on c.addr until ctx ends (an
// interrupt), which is its normal end. Without a token it is read-only;
// with one, actions need it.
func serve(ctx context.Context, c config, _ []string, _ io.Reader, stdout, stderr io.Writer) error {
	s, err := openWithin(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("-addr: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	opts := []shedlockhttp.Option{shedlockhttp.WithTimeout(c.timeout), shedlockhttp.WithLogger(log),
		shedlockhttp.WithTitle(fmt.Sprintf("%s (%s)", s.where, c.store))}
	mode := "read-only (give -token or SHEDLOCK_TOKEN to allow actions)"
	mux := http.NewServeMux()
	if c.token != "" {
		auth := newTokenAuth(c.token)
		opts = append(opts, shedlockhttp.WithAuthorize(auth.authorize), shedlockhttp.WithLoginURL("login"))
		mux.Handle("/login", auth.loginHandler())
		mux.Handle("/logout", auth.logoutHandler())
		mode = "actions need the token (a bearer header, or log in at /login)"
	}
	mux.Handle("/", shedlockhttp.NewHandler(s.Admin, opts...))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "serving the dashboard of %s (%s) on http://%s/: %s\n", s.where, c.store, ln.Addr(), mode)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
