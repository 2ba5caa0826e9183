package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/shedlock-go/shedlock"
)

// herdPodEnv, set in the environment, makes the command one pod of a herd: its
// value is the pod's podSpec in JSON. The pod reads one command a line from
// stdin and answers each with one JSON line on stdout.
const herdPodEnv = "SHEDLOCK_HERD_POD"

// podSpec is what the coordinator tells a pod.
type podSpec struct {
	Store    string // "mysql", "postgres" or "redis"
	DSN      string // SQL DSN, or Redis address
	Table    string // SQL table, or Redis env
	Version  string // the MySQL server's version, for the floor's UTC pin
	ID       int
	Jobs     int
	Pool     int // connections in the pod's pool
	Task     time.Duration
	Most     time.Duration
	Least    time.Duration
	FireTime bool // Run is told each tick's fire time (shedlock.ContextWithFireTime)
	// FloorAs makes the floor send its acquiring statement as the provider
	// does, in the ways listed (see -floor-as).
	FloorAs     []string
	MaxInFlight int // WithMaxInFlight for the executor; 0: its default
}

// podCmd is one command: "warm" (learn every job's name while another holds
// it), "tick" (run every job at At) or "quit".
type podCmd struct {
	Op   string
	Kind string // "library" or "floor"
	Seq  int
	At   int64 // the tick, Unix nanoseconds
}

// podReply answers a command.
type podReply struct {
	Ready bool   `json:",omitempty"`
	Error string `json:",omitempty"` // the pod could not go on
	Tick  *podTick
}

// podTick is what one pod saw in one tick.
type podTick struct {
	Seq       int
	Kind      string
	Jobs      []int32 // the jobs whose task ran here
	Delays    []int64 // for each, nanoseconds from the tick to the task's start
	Errors    int     // Run (or a floor statement) returned an error
	ErrSample []string
	Late      int   // attempts the executor gave up as past their fire time's window
	PeakConns int   // most connections the pod's pool had open at once
	LastStart int64 // the latest task start, Unix nanoseconds
	Drained   int64 // nanoseconds from the tick until every job of the pod returned
	CPU       int64 // nanoseconds of CPU (user and system) the pod used in the tick
}

// herdPod is one pod's library (a provider and an executor on a pool of its
// own) and floor (the provider's statements, sent directly on the same pool).
type herdPod struct {
	spec     podSpec
	provider shedlock.LockProvider
	exec     *shedlock.Executor
	late     *lateCounter
	// floorAcquire sends the provider's acquiring statement for name with
	// token; floorRelease its release.
	floorAcquire func(ctx context.Context, name, token string) (bool, error)
	floorRelease func(ctx context.Context, name, token string) error
	conns        func() int // connections the pool has open
	close        func() error
	owner        string
	mu           sync.Mutex
	seq          int
}

func libName(j int) string   { return "herd-" + strconv.Itoa(j) }
func floorName(j int) string { return "floor-" + strconv.Itoa(j) }

// podMain runs a pod until "quit" or the end of stdin.
func podMain(specJSON string) int {
	out := json.NewEncoder(os.Stdout)
	fail := func(err error) int {
		_ = out.Encode(podReply{Error: err.Error()})
		return 1
	}
	var spec podSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(fmt.Errorf("pod spec: %w", err))
	}
	ctx := context.Background()
	p, err := openPod(ctx, spec)
	if err != nil {
		return fail(err)
	}
	defer p.close()
	if err := out.Encode(podReply{Ready: true}); err != nil {
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c podCmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			return fail(fmt.Errorf("command %q: %w", in.Text(), err))
		}
		var r podReply
		switch c.Op {
		case "quit":
			return 0
		case "warm":
			if err := p.warm(ctx); err != nil {
				return fail(err)
			}
		case "tick":
			r.Tick = p.tick(ctx, c)
		default:
			return fail(fmt.Errorf("unknown command %q", c.Op))
		}
		if err := out.Encode(r); err != nil {
			return 1
		}
	}
	return 0
}

func openPod(ctx context.Context, spec podSpec) (*herdPod, error) {
	p := &herdPod{spec: spec, owner: "floor-pod-" + strconv.Itoa(spec.ID), late: &lateCounter{}}
	var err error
	switch spec.Store {
	case "mysql":
		err = openMySQLPod(ctx, p)
	case "postgres":
		err = openPostgresPod(ctx, p)
	case "redis":
		err = openRedisPod(ctx, p)
	default:
		err = fmt.Errorf("unknown store %q", spec.Store)
	}
	if err != nil {
		return nil, err
	}
	p.floorAcquire = floorAs(spec.FloorAs, p.floorAcquire)
	opts := p.late.options()
	if spec.MaxInFlight > 0 {
		opts = append(opts, shedlock.WithMaxInFlight(spec.MaxInFlight))
	}
	p.exec = shedlock.NewExecutor(p.provider, opts...)
	return p, nil
}

// warm makes the provider see every job's name once, as a pod in steady state
// has, and fills the pool: the coordinator holds every row, so each attempt,
// through the library and through the floor, fails. Its pool's worth of
// goroutines open every connection and prepare both sides' statements on it.
func (p *herdPod) warm(ctx context.Context) error {
	errs := make([]error, p.spec.Pool)
	var wg sync.WaitGroup
	for w := range p.spec.Pool {
		wg.Go(func() {
			for j := w; j < p.spec.Jobs; j += p.spec.Pool {
				_, err := p.provider.TryLock(ctx, shedlock.LockConfig{Name: libName(j), LockAtMostFor: p.spec.Most})
				if !errors.Is(err, shedlock.ErrNotAcquired) {
					errs[w] = fmt.Errorf("warm-up %s: got %v, want ErrNotAcquired", libName(j), err)
					return
				}
				if ok, err := p.floorAcquire(ctx, floorName(j), "warm-up"); ok || err != nil {
					errs[w] = fmt.Errorf("warm-up %s: got %v, %v, want not acquired", floorName(j), ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tick waits for the tick, then runs every job at once, one goroutine each, as
// a cron scheduler fires them, and reports what ran.
func (p *herdPod) tick(ctx context.Context, c podCmd) *podTick {
	at := time.Unix(0, c.At)
	r := &podTick{Seq: c.Seq, Kind: c.Kind}
	stop := p.samplePeak(&r.PeakConns)
	lateBefore := p.late.n.Load()
	time.Sleep(time.Until(at))
	cpu := cpuTime()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for j := range p.spec.Jobs {
		wg.Go(func() {
			start, err := p.job(ctx, c.Kind, j, at)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.Errors++
				if len(r.ErrSample) < 3 {
					r.ErrSample = append(r.ErrSample, err.Error())
				}
			}
			if !start.IsZero() {
				r.Jobs = append(r.Jobs, int32(j))
				r.Delays = append(r.Delays, int64(start.Sub(at)))
				r.LastStart = max(r.LastStart, start.UnixNano())
			}
		})
	}
	wg.Wait()
	r.Drained = int64(time.Since(at))
	r.CPU = int64(cpuTime() - cpu)
	stop()
	r.Late = int(p.late.n.Load() - lateBefore)
	return r
}

// job runs job j once, through the library or the floor, and returns when its
// task started (zero if it did not run).
func (p *herdPod) job(ctx context.Context, kind string, j int, at time.Time) (time.Time, error) {
	var start time.Time
	task := func(ctx context.Context) error {
		start = time.Now()
		return sleep(ctx, p.spec.Task)
	}
	if kind == "floor" {
		err := p.floorJob(ctx, floorName(j), task)
		return start, err
	}
	cfg := shedlock.LockConfig{Name: libName(j), LockAtMostFor: p.spec.Most, LockAtLeastFor: p.spec.Least}
	if p.spec.FireTime {
		ctx = withFireTime(ctx, at)
	}
	_, err := p.exec.Run(ctx, cfg, task)
	return start, err
}

// floorJob is a job with the bare statements: acquire, the task, release.
func (p *herdPod) floorJob(ctx context.Context, name string, task func(context.Context) error) error {
	p.mu.Lock()
	p.seq++
	token := p.owner + "." + strconv.Itoa(p.seq)
	p.mu.Unlock()
	ok, err := p.floorAcquire(ctx, name, token)
	if err != nil || !ok {
		return err
	}
	_ = task(ctx)
	return p.floorRelease(ctx, name, token)
}

// samplePeak records the most connections the pool has open, every
// millisecond, until the returned stop is called.
func (p *herdPod) samplePeak(peak *int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			*peak = max(*peak, p.conns())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// cpuTime is the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
