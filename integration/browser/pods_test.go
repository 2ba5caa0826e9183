package browser

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pod is one pod process.
type pod struct {
	name string
	cmd  *exec.Cmd
	log  string // its standard error
}

// podsOf are the pods of one test on one store: they share its journal, and
// the file whose taking hangs an export run (see addJobs).
type podsOf struct {
	store   podStore
	journal *journal
	hang    string
}

func newPodsOf(t *testing.T, s podStore) podsOf {
	dir := t.TempDir()
	return podsOf{store: s, journal: newJournal(filepath.Join(dir, "journal")), hang: filepath.Join(dir, "hang")}
}

// start starts n pods, pod-1 to pod-n, at once, and returns once each is
// ready. They are stopped (SIGTERM, then SIGKILL) when the test ends; the
// logs of each are shown if it failed.
func (ps podsOf) start(t *testing.T, n int) []*pod {
	t.Helper()
	pods := make([]*pod, n)
	ready := make(chan error, n)
	for i := range pods {
		p := &pod{name: fmt.Sprintf("pod-%d", i+1), log: filepath.Join(t.TempDir(), "stderr")}
		p.cmd = exec.Command(os.Args[0], "-test.run=^$")
		p.cmd.Env = append(append(os.Environ(), ps.store.env()...),
			envPod+"="+p.name, envJournal+"="+ps.journal.file, envHang+"="+ps.hang)
		logFile, err := os.Create(p.log)
		require.NoError(t, err)
		p.cmd.Stderr = logFile
		out, err := p.cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, p.cmd.Start())
		pods[i] = p
		t.Cleanup(func() {
			p.stop()
			_ = logFile.Close()
			if b, _ := os.ReadFile(p.log); t.Failed() && len(b) > 0 {
				t.Logf("%s's log:\n%s", p.name, b)
			}
		})
		go func() {
			sc := bufio.NewScanner(out)
			if !sc.Scan() || sc.Text() != "ready" {
				ready <- fmt.Errorf("%s did not start", p.name)
			} else {
				ready <- nil
			}
			for sc.Scan() {
			}
		}()
	}
	deadline := time.After(60 * time.Second)
	for range pods {
		select {
		case err := <-ready:
			require.NoError(t, err)
		case <-deadline:
			t.Fatalf("the pods did not start in 60 s")
		}
	}
	return pods
}

// stop ends the pod: SIGTERM, and SIGKILL if it has not ended in 15 s.
// It reports whether the pod ended on SIGTERM with status 0.
func (p *pod) stop() bool {
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.Success()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	return p.cmd.ProcessState.Success()
}

// kill ends the pod at once, as a node lost would.
func (p *pod) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// named returns the pod of pods called name.
func named(pods []*pod, name string) *pod {
	for _, p := range pods {
		if p.name == name {
			return p
		}
	}
	return nil
}
