// Package etcdcluster starts private etcd clusters for tests: three members
// (or another count) of Debian's etcd-server on loopback ports of their own,
// their data in a temporary directory, each member a process that a test can
// SIGKILL and restart. It speaks to the members over their HTTP gateway, so
// that it needs no etcd client.
package etcdcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

// Binary is where Debian's etcd-server installs etcd.
const Binary = "/usr/bin/etcd"

// Cluster is a running private cluster.
type Cluster struct {
	dir     string
	members []*Member
}

// Member is one etcd process of a Cluster.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	args      []string
	log       string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error // receives the exit of cmd
}

// Find returns the etcd binary: $SHEDLOCK_ETCD_BIN, etcd on PATH, or Binary.
func Find() (string, error) {
	if bin := os.Getenv("SHEDLOCK_ETCD_BIN"); bin != "" {
		return bin, nil
	}
	if bin, err := exec.LookPath("etcd"); err == nil {
		return bin, nil
	}
	if _, err := os.Stat(Binary); err == nil {
		return Binary, nil
	}
	return "", errors.New("etcdcluster: no etcd binary (Debian: apt-get install etcd-server; or set SHEDLOCK_ETCD_BIN)")
}

// Start starts n members in dir, on free ports of 127.0.0.1, and returns once
// every member reports itself healthy (it has a leader and serves).
func Start(ctx context.Context, dir string, n int) (*Cluster, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	ports, err := privatedb.FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	token := fmt.Sprintf("shedlock-test-%d-%d", os.Getpid(), ports[0])
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		m := &Member{Name: name, ClientURL: client, log: filepath.Join(dir, name+".log")}
		m.args = []string{bin,
			"--name", name,
			"--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new", "--initial-cluster-token", token,
			"--logger", "zap", "--log-outputs", "stderr",
		}
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		if err := m.start(); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// Endpoints returns the members' client URLs.
func (c *Cluster) Endpoints() []string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.ClientURL
	}
	return urls
}

// Members returns the members, in the order of Endpoints.
func (c *Cluster) Members() []*Member { return c.members }

// WaitHealthy polls every running member until each reports itself healthy.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		for _, m := range c.members {
			if m.Running() {
				if e := m.Healthy(ctx); e != nil {
					err = errors.Join(err, fmt.Errorf("%s: %w", m.Name, e))
				}
			} else if e := m.exited(); e != nil {
				err = errors.Join(err, e)
			}
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("etcdcluster: not healthy (logs in %s): %w", c.dir, errors.Join(err, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// Leader returns the member that leads, as the running members report it;
// an error when they do not agree on one that runs.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	ids := map[string]*Member{}
	leaders := map[string]bool{}
	var errs error
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		st, err := m.status(ctx)
		if err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		ids[st.Header.MemberID] = m
		if st.Leader != "" && st.Leader != "0" {
			leaders[st.Leader] = true
		}
	}
	if len(leaders) == 1 {
		for id := range leaders {
			if m, ok := ids[id]; ok {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("etcdcluster: no single leader among the running members (%d answers): %w", len(ids), errs)
}

// WaitLeader polls until the running members agree on a leader.
func (c *Cluster) WaitLeader(ctx context.Context) (*Member, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := c.Leader(ctx)
		if err == nil {
			return m, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.Join(err, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

// Close stops every member (SIGTERM, then SIGKILL after 10s) and waits.
func (c *Cluster) Close() error {
	var err error
	for _, m := range c.members {
		err = errors.Join(err, m.stop())
	}
	return err
}

type status struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

func (m *Member) status(ctx context.Context) (status, error) {
	var st status
	body, err := m.post(ctx, "/v3/maintenance/status")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%s: status %q: %w", m.Name, body, err)
	}
	return st, nil
}

func (m *Member) post(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.ClientURL+path, bytes.NewReader([]byte("{}")))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", m.Name, path, resp.Status, buf.Bytes())
	}
	return buf.Bytes(), nil
}

// Healthy asks the member's /health: nil when it has a leader and serves.
func (m *Member) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return err
	}
	if h.Health != "true" {
		return fmt.Errorf("health %q", h.Health)
	}
	return nil
}

// Running reports whether the member's process runs.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil
}

// exited returns why a member that was started is no longer running, if it
// exited on its own.
func (m *Member) exited() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil || m.done == nil {
		return nil
	}
	return fmt.Errorf("%s is not running (see %s)", m.Name, m.log)
}

func (m *Member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("etcdcluster: %s already runs", m.Name)
	}
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("etcdcluster: %w", err)
	}
	// Not CommandContext: the member must outlive the ctx of the call that starts it.
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("etcdcluster: start %s: %w", m.Name, err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		logf.Close()
		m.mu.Lock()
		if m.cmd == cmd {
			m.cmd = nil
		}
		m.mu.Unlock()
		done <- err
	}()
	m.cmd, m.done = cmd, done
	return nil
}

// Kill sends SIGKILL to the member and waits for it to exit: it loses
// whatever it had not written to disk, as a crash would.
func (m *Member) Kill() error { return m.signal(syscall.SIGKILL, 0) }

// Restart starts a stopped or killed member again on its data directory and
// ports, and waits until it reports itself healthy.
func (m *Member) Restart(ctx context.Context) error {
	if err := m.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := m.Healthy(ctx)
		if err == nil {
			return nil
		}
		if e := m.exited(); e != nil {
			return e
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("etcdcluster: %s restarted but not healthy (see %s): %w", m.Name, m.log, errors.Join(err, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

func (m *Member) stop() error { return m.signal(syscall.SIGTERM, 10*time.Second) }

// signal sends sig and waits for the exit; after grace (if > 0) it kills.
func (m *Member) signal(sig syscall.Signal, grace time.Duration) error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("etcdcluster: signal %s: %w", m.Name, err)
	}
	if grace > 0 {
		select {
		case <-done:
			return nil
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-done
	return nil
}

// PID returns the member's process id, 0 when it does not run.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Port returns the member's client port.
func (m *Member) Port() int {
	i := strings.LastIndexByte(m.ClientURL, ':')
	p, _ := strconv.Atoi(m.ClientURL[i+1:])
	return p
}
