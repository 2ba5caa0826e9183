package browser

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pod is one pod process.
type pod struct {
	name string
	cmd  *exec.Cmd
}

// startPods starts n pods on the lock file dsn; each writes its runs to
// runsDir. They are stopped (SIGTERM, then SIGKILL) when the test ends.
func startPods(t *testing.T, n int, dsn, runsDir string) []*pod {
	t.Helper()
	var pods []*pod
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("pod-%d", i)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SHEDLOCK_BROWSER_POD="+name, "SHEDLOCK_BROWSER_DB="+dsn,
			"SHEDLOCK_BROWSER_RUNS="+runsDir)
		cmd.Stderr = &prefixWriter{t: t, prefix: name + ": "}
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &pod{name: name, cmd: cmd}
		pods = append(pods, p)
		t.Cleanup(p.stop)
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			ready <- sc.Scan() && sc.Text() == "ready"
			for sc.Scan() {
			}
		}()
		select {
		case ok := <-ready:
			require.True(t, ok, "%s did not start", name)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not start in 30 s", name)
		}
	}
	return pods
}

// stop ends the pod: SIGTERM, and SIGKILL if it has not ended in 10 s.
func (p *pod) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// kill ends the pod at once, as a node lost would.
func (p *pod) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// prefixWriter sends a process's lines to the test log.
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.t.Log(w.prefix + line)
	}
	return len(b), nil
}

// runsSince counts, by pod, the runs of job that started after since.
func runsSince(t *testing.T, runsDir, job string, since time.Time) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(runsDir, "*.log"))
	require.NoError(t, err)
	out := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		pod := strings.TrimSuffix(filepath.Base(f), ".log")
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[:len(lines)-1] { // the last: "", or a line being written
			name, at, ok := strings.Cut(line, " ")
			if !ok || name != job {
				continue
			}
			ns, err := strconv.ParseInt(at, 10, 64)
			if err == nil && ns > since.UnixNano() {
				out[pod]++
			}
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
