package k8s_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// workerEnv carries a worker's spec, as JSON, to the test binary run again
// as a pod process.
const workerEnv = "SHEDLOCK_K8S_WORKER"

// workerSpec is what a pod process needs.
type workerSpec struct {
	Kind      string // chaos, shedlock-leader or client-go-leader
	ID        string // the pod's name
	URL       string
	CAData    []byte
	Token     string
	Namespace string
	Env       string // chaos and shedlock-leader: the provider's env
	Journal   string // where the process appends its events, one JSON line each
}

// event is one line of a journal.
type event struct {
	Ev     string `json:"ev"`               // run, lead, unlead, write, requests
	T      int64  `json:"t"`                // when, in nanoseconds since 1970 (one machine: one clock)
	Pod    string `json:"pod"`              // the process's pod
	Name   string `json:"name,omitempty"`   // run: the lock
	ID     string `json:"id,omitempty"`     // run: the run's
	Acq    int64  `json:"acq,omitempty"`    // run: after TryLock returned
	Rel    int64  `json:"rel,omitempty"`    // run: after its write returned
	Fence  int64  `json:"fence,omitempty"`  // run, lead, write: the token
	Status string `json:"status,omitempty"` // run, write: ok, fenced, unknown, none
	N      int64  `json:"n,omitempty"`      // requests: lease requests sent so far
}

// journal appends events to a file, a write(2) each: a process killed by
// SIGKILL loses none it wrote.
type journal struct {
	mu  sync.Mutex
	f   *os.File
	pod string
}

func openJournal(path, pod string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &journal{f: f, pod: pod}, nil
}

func (j *journal) log(e event) {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	e.Pod = j.pod
	b, _ := json.Marshal(e)
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.f.Write(append(b, '\n'))
}

func readJournals(t *testing.T, dir string) []event {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.journal"))
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: %q: %v", p, sc.Text(), err)
			}
			evs = append(evs, e)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

// worker runs the pod process spec describes, until its stdin closes.
func worker(raw string) int {
	var spec workerSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bad worker spec:", err)
		return 2
	}
	j, err := openJournal(spec.Journal, spec.ID)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadByte() // EOF when the test closes the pipe
		close(stop)
	}()
	switch spec.Kind {
	case "chaos":
		err = chaosWorker(spec, j, stop)
	case "shedlock-leader", "client-go-leader":
		err = leaderWorker(spec, j, stop)
	default:
		err = fmt.Errorf("unknown worker kind %q", spec.Kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// countingTransport counts the requests to Leases.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "/leases") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// clients returns the worker's clientset, whose Lease requests count into n,
// with a request timeout of timeout.
func (s workerSpec) client(n *atomic.Int64, timeout time.Duration) (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(&rest.Config{
		Host:            s.URL,
		BearerToken:     s.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData},
		QPS:             -1,
		Timeout:         timeout,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return countingTransport{next: rt, n: n}
		},
	})
}

// pod is a worker process the test started.
type pod struct {
	spec  workerSpec
	cmd   *exec.Cmd
	stdin *os.File
	done  chan struct{}
}

// startPod starts a worker process for spec, as user on s, its journal and
// log in dir (one of each per process: a restarted pod gets new ones).
func startPod(t *testing.T, s *kubeapiserver.Server, dir string, spec workerSpec) *pod {
	t.Helper()
	spec.URL, spec.CAData, spec.Token = s.URL, s.CAData, s.Token(kubeapiserver.Locker)
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", spec.ID, time.Now().UnixNano()))
	spec.Journal = base + ".journal"
	raw, _ := json.Marshal(spec)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stdin = r
	logf, err := os.Create(base + ".log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	logf.Close()
	p := &pod{spec: spec, cmd: cmd, stdin: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// signal sends sig to the pod's process.
func (p *pod) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", p.spec.ID, sig, err)
	}
}

// kill SIGKILLs the pod and waits for it to die.
func (p *pod) kill(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGKILL)
	<-p.done
}

// stop closes the pod's stdin and waits until it exits by itself; its exit
// status must be 0.
func (p *pod) stop(t *testing.T) {
	t.Helper()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop within 60s", p.spec.ID)
	}
	if !p.cmd.ProcessState.Success() {
		log, _ := os.ReadFile(strings.TrimSuffix(p.spec.Journal, ".journal") + ".log")
		t.Fatalf("%s: %v\n%s", p.spec.ID, p.cmd.ProcessState, log)
	}
}
