package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the quick start itself when the test binary is started as it.
func TestMain(m *testing.M) {
	if os.Getenv("QUICKSTART_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// The quick start starts while its database is down, as the README says a
// service can: it says so, keeps running, and stops cleanly on SIGTERM.
func TestQuickStartStartsWhileDatabaseIsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUICKSTART_AS_MAIN=1", "MYSQL_DSN=root@tcp("+closedAddr(t)+")/test", "POD_NAME=pod-a")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var first string
	if lines.Scan() {
		first = lines.Text()
	}
	if !strings.Contains(first, "WARN") || !strings.Contains(first, "jobs wait for the database") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("first line %q, want a warning that the jobs wait for the database", first)
	}
	// Still running: it ends only when told to.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the quick start is gone after warning: %v", err)
	}
	for lines.Scan() {
		t.Log(lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}

// closedAddr is an address where nothing listens: a database that is down.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
