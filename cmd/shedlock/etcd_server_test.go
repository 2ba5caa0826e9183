package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// etcdServer is the etcd the command's tests use: SHEDLOCK_ETCD_ENDPOINTS
// (host:port,...), else a private one-member cluster of the etcd binary
// (Debian's etcd-server, or SHEDLOCK_ETCD_BIN) for this test binary, stopped
// by TestMain.
var etcdServer = sync.OnceValues(findEtcd)

// etcdProc is the private member, if one was started.
var etcdProc struct {
	cmd *exec.Cmd
	dir string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if etcdProc.cmd != nil {
		_ = etcdProc.cmd.Process.Kill()
		_ = etcdProc.cmd.Wait()
		_ = os.RemoveAll(etcdProc.dir)
	}
	os.Exit(code)
}

// etcdURL is the test server as the command's -dsn takes it.
func etcdURL(t testing.TB) string { return "etcd://" + server(t, "etcd", etcdServer) }

func findEtcd() (string, error) {
	if slices.Contains(strings.Split(os.Getenv("SHEDLOCK_SKIP_STORES"), ","), "etcd") {
		return "", fmt.Errorf("SHEDLOCK_SKIP_STORES=%s", os.Getenv("SHEDLOCK_SKIP_STORES"))
	}
	if v := os.Getenv("SHEDLOCK_ETCD_ENDPOINTS"); v != "" {
		return v, nil
	}
	bin := os.Getenv("SHEDLOCK_ETCD_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("etcd"); err != nil {
			bin = "/usr/bin/etcd"
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("SHEDLOCK_ETCD_ENDPOINTS unset; no etcd binary (Debian: apt-get install etcd-server): %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "shedlock-cli-etcd-")
	if err != nil {
		return "", err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name", "m0", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "m0="+peer, "--logger", "zap", "--log-outputs", "stderr")
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return "", err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start etcd: %w", err)
	}
	etcdProc.cmd, etcdProc.dir = cmd, dir
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := etcdHealthy(client)
		if err == nil {
			return strings.TrimPrefix(client, "http://"), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("private etcd not healthy (see %s): %w", logf.Name(), err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

func etcdHealthy(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
