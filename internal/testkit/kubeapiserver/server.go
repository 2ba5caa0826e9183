package kubeapiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

// User is a user of the token file.
type User struct {
	Name  string
	Token string
	Group string // "" for none
}

// The users every server knows. Admin is in system:masters (allowed
// everything, RBAC aside); Locker and Limited are allowed nothing until a
// test grants them verbs in a namespace (Grant).
const (
	Admin   = "shedlock-admin"
	Locker  = "shedlock-locker"
	Limited = "shedlock-limited"
)

// Server is a running kube-apiserver on a private single-member etcd.
type Server struct {
	URL    string // https://127.0.0.1:<port>
	CAData []byte // PEM: the CA that signed the serving certificate
	users  map[string]User
	dir    string
	etcd   *etcdcluster.Cluster
	args   []string
	log    string
	http   *http.Client

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts etcd and kube-apiserver with their data in dir, on free
// loopback ports, and returns once the server's /readyz answers ok.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := Binary(ctx)
	if err != nil {
		return nil, err
	}
	users := []User{{Name: Admin, Group: "system:masters"}, {Name: Locker}, {Name: Limited}}
	s := &Server{users: map[string]User{}, dir: dir, log: filepath.Join(dir, "kube-apiserver.log")}
	for i := range users {
		var b [16]byte
		_, _ = rand.Read(b[:])
		users[i].Token = hex.EncodeToString(b[:])
		s.users[users[i].Name] = users[i]
	}
	f, err := writeFiles(dir, users)
	if err != nil {
		return nil, fmt.Errorf("kubeapiserver: %w", err)
	}
	if s.CAData, err = os.ReadFile(f.caCert); err != nil {
		return nil, fmt.Errorf("kubeapiserver: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAData)
	s.http = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	ports, err := privatedb.FreePorts(1)
	if err != nil {
		return nil, err
	}
	s.URL = "https://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o755); err != nil {
		return nil, fmt.Errorf("kubeapiserver: %w", err)
	}
	if s.etcd, err = etcdcluster.Start(ctx, filepath.Join(dir, "etcd"), 1); err != nil {
		return nil, err
	}
	s.args = s.flags(bin, ports[0], f)
	if err := s.start(); err != nil {
		return nil, errors.Join(err, s.etcd.Close())
	}
	if err := s.WaitReady(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// flags are kube-apiserver's: loopback only, RBAC, no controllers needed.
func (s *Server) flags(bin string, port int, f files) []string {
	return []string{bin,
		"--etcd-servers=" + s.etcd.Endpoints()[0],
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + f.servingCert, "--tls-private-key-file=" + f.servingKey,
		"--cert-dir=" + filepath.Join(s.dir, "certs"),
		"--token-auth-file=" + f.tokens, "--authorization-mode=RBAC", "--anonymous-auth=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f.saPub, "--service-account-signing-key-file=" + f.saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		// No controller manager or other API servers: nothing reconciles the
		// kubernetes service's endpoints, and no flow control is wanted on
		// loopback.
		"--endpoint-reconciler-type=none", "--enable-priority-and-fairness=false",
		"--profiling=false", "--v=1",
	}
}

// Token returns the bearer token of user (Admin, Locker or Limited).
func (s *Server) Token(user string) string { return s.users[user].Token }

// Dir returns the server's directory: its files and its log.
func (s *Server) Dir() string { return s.dir }

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("kubeapiserver: already runs")
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("kubeapiserver: %w", err)
	}
	// Not CommandContext: the server outlives the ctx of the call that starts it.
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("kubeapiserver: start: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	return nil
}

// running reports whether the server's process runs.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// PID returns the server's process id, 0 when it does not run.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// WaitReady polls /readyz until it answers ok, for up to 2 minutes.
func (s *Server) WaitReady(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := s.Do(ctx, http.MethodGet, "/readyz", nil)
		if err == nil {
			return nil
		}
		if !s.running() {
			return fmt.Errorf("kubeapiserver: exited (see %s): %w", s.log, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("kubeapiserver: not ready (see %s): %w", s.log, errors.Join(err, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// Restart stops the server (SIGTERM, then SIGKILL after 10s), starts it again
// on the same port, files and etcd, and waits until it is ready.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.signal(syscall.SIGTERM, 10*time.Second); err != nil {
		return err
	}
	if err := s.start(); err != nil {
		return err
	}
	return s.WaitReady(ctx)
}

// Close stops the server, then its etcd.
func (s *Server) Close() error {
	return errors.Join(s.signal(syscall.SIGTERM, 10*time.Second), s.etcd.Close())
}

// signal sends sig to the server and waits for its exit; after grace (if >
// 0) it kills it.
func (s *Server) signal(sig syscall.Signal, grace time.Duration) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kubeapiserver: signal: %w", err)
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

// Do sends one request as Admin and returns the body of a 2xx answer; any
// other status is an error carrying it.
func (s *Server) Do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	return s.DoAs(ctx, Admin, method, path, body)
}

// DoAs is Do as user.
func (s *Server) DoAs(ctx context.Context, user, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.users[user].Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, &StatusError{Code: resp.StatusCode, Method: method, Path: path, Body: string(b)}
	}
	return b, nil
}

// StatusError is an answer of the server other than 2xx.
type StatusError struct {
	Code         int
	Method, Path string
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("kubeapiserver: %s %s: %d: %s", e.Method, e.Path, e.Code, e.Body)
}
