package shedlockredis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// spawned is the redis-server this test binary started as its main server when
// none was running; TestMain stops it.
var spawned atomic.Pointer[redisServer]

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the client's notes on sentinels and dials drown the test output
	code := m.Run()
	if srv := spawned.Load(); srv != nil {
		srv.stop()
	}
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// redisServer is a redis-server process of this test binary.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
	dir  string
}

// startServer starts redis-server from PATH on a free port, with no persistence,
// and waits until it answers. conf is the start of its configuration file; args
// are more configuration, as --name value.
func startServer(conf string, args ...string) (*redisServer, error) {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		srv, err := startServerOn(port, conf, args...)
		// Another test's server may take the free port first: try another.
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			return srv, err
		}
	}
}

// errPortTaken: the server that answered on the port is not the one started.
var errPortTaken = errors.New("another server answers on the port")

// startServerOn is startServer on port.
func startServerOn(port int, conf string, args ...string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "shedlockredis-")
	if err != nil {
		return nil, err
	}
	confFile := filepath.Join(dir, "redis.conf") // sentinel mode needs a file it can rewrite
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	all := append([]string{confFile, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no"}, args...)
	srv := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: exec.Command(bin, all...), dir: dir}
	if err := srv.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := waitForPing(srv.addr, 10*time.Second); err != nil {
		srv.stop()
		return nil, err
	}
	if err := srv.checkPID(); err != nil {
		srv.stop()
		return nil, err
	}
	return srv, nil
}

// checkPID makes sure that the server answering on s.addr is s's process.
func (s *redisServer) checkPID() error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil && strings.Contains(err.Error(), "unknown command") && slices.Contains(s.cmd.Args, "INFO") {
		return nil // started with INFO renamed away: no other test's server is
	}
	if err != nil {
		return fmt.Errorf("redis-server on %s: INFO server: %w", s.addr, err)
	}
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid)
	for _, line := range strings.Split(info, "\r\n") {
		if line == want {
			return nil
		}
	}
	return fmt.Errorf("%w: %s, not redis-server pid %d", errPortTaken, s.addr, s.cmd.Process.Pid)
}

// startServerFor is startServer for one test, stopped when it ends. Without a
// redis-server on PATH the test skips, loudly; under CI=true it fails.
func startServerFor(t testing.TB, conf string, args ...string) *redisServer {
	t.Helper()
	srv, err := startServer(conf, args...)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot start redis-server (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: cannot start redis-server: %v", err)
	}
	t.Cleanup(srv.stop)
	return srv
}

func (s *redisServer) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitForPing(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer within %v: %w", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Logf("waiting for %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// A server started on a port another server holds must not pass for started:
// its tests would talk to the other one (as parallel tests did when two
// picked the same free port, and a test meant for a server with ACLs reached
// one with CONFIG renamed).
func TestStartServerOnATakenPort(t *testing.T) {
	t.Parallel()
	first := startServerFor(t, "")
	_, port, err := net.SplitHostPort(first.addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	second, err := startServerOn(n, "")
	if err == nil {
		second.stop()
		t.Fatalf("a second server on %s's port %d passed for started", first.addr, n)
	}
}
