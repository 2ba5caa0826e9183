package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// herdConfig is a run of `shedlock-bench herd`: P OS processes ("pods") × J
// jobs firing at one tick, on each store, through the library and through the
// floor (the provider's statements sent directly), in the same run.
type herdConfig struct {
	scales      []herdScale
	stores      []string
	ticks       int
	task        time.Duration
	most, least time.Duration
	mysqlDSN    string // "" for a private server
	postgresDSN string
	redisAddr   string
	shared      bool // the servers the tests use, not private ones
	chart       string
	noFireTime  bool
	verbose     bool     // a line per tick on stderr
	floorAs     []string // ways the floor sends its acquire as the provider does
	maxInFlight int
}

type herdScale struct{ pods, jobs int }

func (s herdScale) String() string { return fmt.Sprintf("%d × %s", s.pods, thousands(s.jobs)) }

func parseHerdFlags(args []string) (herdConfig, error) {
	fs := flag.NewFlagSet("shedlock-bench herd", flag.ContinueOnError)
	var c herdConfig
	var scales, stores string
	fs.StringVar(&scales, "scales", "16x500,32x1000", "pods×jobs of each herd")
	fs.StringVar(&stores, "stores", "mysql,postgres,redis", "stores to measure")
	fs.IntVar(&c.ticks, "ticks", 5, "measured ticks, for the library and for the floor each")
	fs.DurationVar(&c.task, "task", 20*time.Millisecond, "how long each job's task runs")
	fs.DurationVar(&c.most, "most", time.Minute, "LockAtMostFor")
	fs.DurationVar(&c.least, "least", 5*time.Second, "LockAtLeastFor")
	fs.BoolVar(&c.shared, "shared", false, "use the servers the tests use ($SHEDLOCK_MYSQL_DSN, $SHEDLOCK_POSTGRES_DSN, "+
		"$SHEDLOCK_REDIS_ADDR or the local ones) instead of private servers started for the run")
	fs.StringVar(&c.chart, "chart", "docs/bench-herd.svg", "chart file, .svg or .png (empty: no chart)")
	fs.BoolVar(&c.noFireTime, "no-fire-time", false, "do not tell Run each tick's fire time")
	fs.BoolVar(&c.verbose, "v", false, "print a line per tick on stderr")
	fs.IntVar(&c.maxInFlight, "max-in-flight", 0, "the executors' WithMaxInFlight (default: the pool's size)")
	var floorAs string
	fs.StringVar(&floorAs, "floor-as", "", "send the floor's acquire as the provider does, in these ways (comma-separated): "+
		"returning (PostgreSQL: RETURNING the row, read with QueryRow), deadline (under a context with a deadline), "+
		"goroutine (from a goroutine of its own)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, f := range strings.Split(scales, ",") {
		p, j, ok := strings.Cut(strings.TrimSpace(f), "x")
		pods, err1 := strconv.Atoi(p)
		jobs, err2 := strconv.Atoi(j)
		if !ok || err1 != nil || err2 != nil || pods < 1 || jobs < 1 {
			return c, fmt.Errorf("-scales: %q is not PODSxJOBS", f)
		}
		c.scales = append(c.scales, herdScale{pods, jobs})
	}
	c.stores = strings.Split(stores, ",")
	if floorAs != "" {
		c.floorAs = strings.Split(floorAs, ",")
	}
	if c.ticks < 1 || c.task < 0 || c.most <= 0 || c.least < 0 || c.least > c.most {
		return c, errors.New("-ticks must be >= 1, -task >= 0, 0 <= -least <= -most")
	}
	if c.shared {
		c.mysqlDSN = envOr("SHEDLOCK_MYSQL_DSN", localDSN)
		c.postgresDSN = envOr("SHEDLOCK_POSTGRES_DSN", "postgres://root@127.0.0.1:5432/test?sslmode=disable")
		c.redisAddr = envOr("SHEDLOCK_REDIS_ADDR", "127.0.0.1:6379")
	}
	return c, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func herdMain(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseHerdFlags(args)
	if err != nil {
		return err
	}
	return runHerd(ctx, cfg, out)
}

// runHerd measures every store at every scale, printing a table per store
// and drawing the chart.
func runHerd(ctx context.Context, cfg herdConfig, out io.Writer) error {
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(out, "# The herd: P pods × J jobs at one tick\n\nEach pod an OS process with one provider on a pool of its own "+
		"and one executor; every job's Run at the tick, one goroutine each; task %v, LockAtMostFor %v, LockAtLeastFor %v; "+
		"%d ticks through the library and %d through the floor (the provider's statements sent directly on the same pools), "+
		"alternating, after an unmeasured warm-up tick each (its duplicates, missed jobs and errors count).\n",
		cfg.task, cfg.most, cfg.least, cfg.ticks, cfg.ticks)
	var all []herdResult
	for _, name := range cfg.stores {
		s, err := openHerdStore(ctx, name, cfg, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(out, "\n## %s\n\n", s.label)
		printHerdHeader(out)
		for _, sc := range cfg.scales {
			r, err := herdRun(ctx, s, sc, cfg)
			if err != nil {
				return errors.Join(fmt.Errorf("%s, %v: %w", s.label, sc, err), s.Close())
			}
			printHerd(out, r)
			all = append(all, r)
		}
		printHerdErrors(out, all)
		if err := s.Close(); err != nil {
			return err
		}
	}
	if cfg.chart == "" {
		return nil
	}
	if err := writeHerdChart(cfg.chart, all); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nchart: %s\n", cfg.chart)
	return nil
}

func openHerdStore(ctx context.Context, name string, cfg herdConfig, dir string) (*herdStore, error) {
	switch name {
	case "mysql":
		return openMySQLHerd(ctx, cfg.mysqlDSN, dir)
	case "postgres":
		return openPostgresHerd(ctx, cfg.postgresDSN, dir)
	case "redis":
		return openRedisHerd(ctx, cfg.redisAddr, dir)
	}
	return nil, fmt.Errorf("unknown store %q (mysql, postgres, redis)", name)
}

// pod is a running pod process, as the coordinator drives it.
type pod struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (p *pod) send(c podCmd) error {
	b, _ := json.Marshal(c)
	_, err := p.in.Write(append(b, '\n'))
	return err
}

func (p *pod) receive() (podReply, error) {
	var r podReply
	if !p.out.Scan() {
		return r, fmt.Errorf("pod ended: %w", errors.Join(p.out.Err(), io.ErrUnexpectedEOF))
	}
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		return r, err
	}
	if r.Error != "" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// startPods starts n pods, this command's own executable each, and waits
// until every one is ready.
func startPods(ctx context.Context, n int, spec podSpec) ([]*pod, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	var pods []*pod
	stop := func() {
		for _, p := range pods {
			_ = p.send(podCmd{Op: "quit"})
			_ = p.in.Close()
		}
		for _, p := range pods {
			_ = p.cmd.Wait()
		}
	}
	for i := range n {
		s := spec
		s.ID = i
		b, _ := json.Marshal(s)
		cmd := exec.CommandContext(ctx, self)
		cmd.Env = append(os.Environ(), herdPodEnv+"="+string(b))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			stop()
			return nil, nil, err
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			stop()
			return nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			stop()
			return nil, nil, err
		}
		sc := bufio.NewScanner(outPipe)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		pods = append(pods, &pod{cmd: cmd, in: in, out: sc})
	}
	for i, p := range pods {
		if _, err := p.receive(); err != nil {
			stop()
			return nil, nil, fmt.Errorf("pod %d: %w", i, err)
		}
	}
	return pods, stop, nil
}

// all sends c to every pod and collects the replies.
func all(pods []*pod, c podCmd) ([]podReply, error) {
	for i, p := range pods {
		if err := p.send(c); err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
	}
	replies := make([]podReply, len(pods))
	for i, p := range pods {
		r, err := p.receive()
		if err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
		replies[i] = r
	}
	return replies, nil
}

// tickLead is how long before a tick its command is sent, so that every pod
// is waiting for it when it comes.
const tickLead = 500 * time.Millisecond

// warmUpTicks is how many ticks of each side go unmeasured (see herdRun).
const warmUpTicks = 1

// herdRun runs one scale on one store: the pods start and learn the names,
// then the library and the floor take turns, tick by tick, each side's first
// tick unmeasured: it is the first herd of its pods' processes (their heaps
// and goroutine stacks grow, and the executor has not yet run a job), where
// a service's pods meet a tick in steady state. A side's next tick
// waits until its previous tick's locks are free again (the last run's start
// plus LockAtLeastFor, and a second), as the next fire time of a job would.
func herdRun(ctx context.Context, s *herdStore, sc herdScale, cfg herdConfig) (herdResult, error) {
	r := herdResult{store: s.label, scale: sc, pool: s.pool(sc.pods)}
	table, err := s.setUp(ctx, sc.jobs)
	if err != nil {
		return r, err
	}
	defer s.drop(context.WithoutCancel(ctx))
	spec := podSpec{Store: s.kind, DSN: s.dsn, Table: table, Version: s.version, Jobs: sc.jobs, Pool: r.pool,
		Task: cfg.task, Most: cfg.most, Least: cfg.least, FireTime: !cfg.noFireTime, FloorAs: cfg.floorAs,
		MaxInFlight: cfg.maxInFlight}
	pods, stop, err := startPods(ctx, sc.pods, spec)
	if err != nil {
		return r, err
	}
	defer stop()
	if _, err := all(pods, podCmd{Op: "warm"}); err != nil {
		return r, err
	}
	if err := s.free(ctx); err != nil {
		return r, err
	}
	next := map[string]time.Time{}
	for k := range 2 * (cfg.ticks + warmUpTicks) {
		kind := [2]string{"library", "floor"}[k%2]
		side := &r.sides[k%2]
		at := time.Now().Add(tickLead)
		if at.Before(next[kind]) {
			at = next[kind]
		}
		before, err := readCount(ctx, s)
		if err != nil {
			return r, err
		}
		seq := k/2 - warmUpTicks
		replies, err := all(pods, podCmd{Op: "tick", Kind: kind, Seq: seq, At: at.UnixNano()})
		if err != nil {
			return r, err
		}
		after, err := readCount(ctx, s)
		if err != nil {
			return r, err
		}
		var verbose io.Writer
		if cfg.verbose {
			verbose = os.Stderr
		}
		last := side.add(replies, sc, before, after-s.readCost, verbose, seq < 0)
		next[kind] = at.Add(cfg.least + time.Second)
		if last.After(at) {
			next[kind] = last.Add(cfg.least + time.Second)
		}
	}
	return r, ctx.Err()
}

// readCount reads the server's statement count, -1 when it keeps none.
func readCount(ctx context.Context, s *herdStore) (int64, error) {
	if s.statements == nil {
		return -1, nil
	}
	n, err := s.statements(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the server's statement count: %w", err)
	}
	return n, nil
}
