package privatedb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Redis is a private redis-server that keeps nothing on disk: no snapshot, no
// append-only file. A restart would lose every key, so it has none.
type Redis struct {
	addr string
	cmd  *exec.Cmd
	done chan error // receives the exit of cmd
}

// StartRedis starts redis-server on 127.0.0.1:port, its log in dir, and returns
// once it answers. It needs redis-server on PATH.
func StartRedis(ctx context.Context, dir string, port int) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("privatedb: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "redis-server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("privatedb: %w", err)
	}
	r := &Redis{addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan error, 1)}
	// Not CommandContext: the server must outlive the ctx of the call that starts it.
	r.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no")
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("privatedb: start redis-server: %w", err)
	}
	go func() { r.done <- r.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := PingRedis(r.addr)
		if err == nil {
			return r, nil
		}
		select {
		case exitErr := <-r.done:
			return nil, fmt.Errorf("privatedb: redis-server exited before it answered (see %s): %v",
				filepath.Join(dir, "redis-server.log"), exitErr)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.Join(fmt.Errorf("privatedb: redis-server on %s does not answer: %w", r.addr, err),
				ctx.Err(), r.Close())
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// Addr returns the server's host:port.
func (r *Redis) Addr() string { return r.addr }

// Close stops the server (SIGTERM) and waits for it.
func (r *Redis) Close() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("privatedb: signal redis-server: %w", err)
	}
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		return errors.New("privatedb: redis-server did not stop within 30s; killed")
	}
	r.cmd = nil
	return nil
}

// PingRedis sends PING to the Redis server at addr and checks its answer. It
// speaks the protocol itself, so that this module needs no Redis client.
func PingRedis(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
