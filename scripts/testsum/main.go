// Command testsum reads the `go test -json` output of the modules that
// scripts/test ran and says what happened: per module, how many tests passed,
// failed and were skipped (tests, subtests and benchmarks that ran), and the
// tests that failed, with their output.
//
// A test skipped for want of a server is a failure: `make test` passes only
// when its tests ran. It is allowed only for a store that SHEDLOCK_SKIP_STORES
// names (a comma-separated list of mysql, postgres, redis, pgbouncer, galera, etcd),
// which the user sets to leave that store out; a skip whose reason names no
// store is a failure too, unless testsum runs with -short. The last line is
// "total: N passed, N failed, N skipped".
//
// Its arguments come in fours, one module each: the module's name, its
// `go test -json` file, whether its steps succeeded (ok or FAIL), and their time
// in seconds.
//
//	testsum integration /tmp/t/integration.json ok 61.2 cmd/shedlock /tmp/t/cmd.json ok 9.1
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// event is one line of `go test -json`.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// result is one test's end.
type result struct {
	pkg, test, action string
	output            []string
}

// module is what one module's tests did.
type module struct {
	name                   string
	passed, failed         int
	allowedSkips           int
	failures, badSkips     []result
	pkgFailures            []result
	status, elapsedSeconds string // from scripts/test: ok or FAIL, and the time
}

// benchResult is the line a benchmark prints when it has run; test2json may
// cut it after the benchmark's name.
var benchResult = regexp.MustCompile(`^\s*(Benchmark\S*\s+)?\d+\s+[\d.]+ ns/op`)

// stores maps what a skip's reason says to the store SHEDLOCK_SKIP_STORES names.
var stores = []struct {
	name string
	re   *regexp.Regexp
}{
	{"mysql", regexp.MustCompile(`(?i)mysql|mariadb`)},
	{"postgres", regexp.MustCompile(`(?i)postgres`)},
	{"redis", regexp.MustCompile(`(?i)redis`)},
	{"pgbouncer", regexp.MustCompile(`(?i)pgbouncer`)},
	{"galera", regexp.MustCompile(`(?i)galera`)},
	// Before etcd: the Kubernetes tests' reasons name the etcd under their API server.
	{"kubernetes", regexp.MustCompile(`(?i)kubernetes|kube-apiserver`)},
	{"etcd", regexp.MustCompile(`(?i)etcd`)},
	{"chromium", regexp.MustCompile(`(?i)chromium`)},
}

func main() {
	short := flag.Bool("short", false, "allow skips whose reason names no store (go test -short)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: testsum [-short] NAME FILE STATUS SECONDS ...")
	}
	flag.Parse()
	allowed := map[string]bool{}
	for _, s := range strings.Split(os.Getenv("SHEDLOCK_SKIP_STORES"), ",") {
		if s = strings.TrimSpace(strings.ToLower(s)); s != "" {
			allowed[s] = true
		}
	}
	args := flag.Args()
	var mods []*module
	if len(args) == 0 || len(args)%4 != 0 {
		flag.Usage()
		os.Exit(2)
	}
	for ; len(args) > 0; args = args[4:] {
		m := &module{name: args[0], status: args[2], elapsedSeconds: args[3]}
		file := args[1]
		if err := m.read(file, allowed, *short); err != nil {
			fmt.Fprintf(os.Stderr, "testsum: %s: %v\n", file, err)
			os.Exit(2)
		}
		mods = append(mods, m)
	}
	if report(os.Stdout, mods, allowed) {
		os.Exit(1)
	}
}

// read takes in a module's events; a file that is missing means the module
// never got to its tests (scripts/test reports why).
func (m *module) read(file string, allowed map[string]bool, short bool) error {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	outputs := map[string][]string{} // by package and test
	testFailed := map[string]bool{}  // packages with a failed test
	var pkgFails []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // a line of go vet or of the build, not an event
		}
		key := ev.Package + "\x00" + ev.Test
		switch ev.Action {
		case "output", "build-output":
			outputs[key] = append(outputs[key], ev.Output)
			// A benchmark that ran says so in a result line, not in a pass event.
			if strings.HasPrefix(ev.Test, "Benchmark") && benchResult.MatchString(ev.Output) {
				m.passed++
			}
		case "pass", "fail", "skip":
			r := result{pkg: ev.Package, test: ev.Test, action: ev.Action, output: outputs[key]}
			delete(outputs, key)
			if ev.Test == "" {
				if ev.Action == "fail" {
					pkgFails = append(pkgFails, r)
				}
				continue
			}
			if ev.Action == "fail" {
				testFailed[ev.Package] = true
			}
			m.count(r, allowed, short)
		case "build-fail":
			pkgFails = append(pkgFails, result{pkg: ev.Package, action: "build-fail", output: outputs[key]})
		}
	}
	// A package that failed with no failed test did not build, or its
	// TestMain or a goroutine failed outside any test.
	for _, r := range pkgFails {
		if !testFailed[r.pkg] {
			m.pkgFailures = append(m.pkgFailures, r)
		}
	}
	return sc.Err()
}

func (m *module) count(r result, allowed map[string]bool, short bool) {
	switch r.action {
	case "pass":
		m.passed++
	case "fail":
		m.failed++
		m.failures = append(m.failures, r)
	case "skip":
		store := skipStore(r.output)
		if allowed[store] || (store == "" && short) {
			m.allowedSkips++
			return
		}
		m.badSkips = append(m.badSkips, r)
	}
}

// skipStore returns the store a skipped test's reason names, or "".
func skipStore(output []string) string {
	reason := skipReason(output)
	for _, s := range stores {
		if s.re.MatchString(reason) {
			return s.name
		}
	}
	return ""
}

// skipReason is the text a skipped test logged: its t.Skip message.
func skipReason(output []string) string {
	var lines []string
	for _, l := range output {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " ")
}

// report prints the summary and reports whether anything failed.
func report(w io.Writer, mods []*module, allowed map[string]bool) (failed bool) {
	var passed, failedTests, skipped int
	for _, m := range mods {
		for _, r := range m.pkgFailures {
			fmt.Fprintf(w, "\n--- FAIL package %s (%s)\n%s", r.pkg, m.name, tail(r.output, 40))
		}
		for _, r := range m.failures {
			fmt.Fprintf(w, "\n--- FAIL %s (%s)\n%s", r.test, r.pkg, tail(r.output, 40))
		}
		for _, r := range m.badSkips {
			fmt.Fprintf(w, "\n--- SKIP counted as a failure: %s (%s)\n    %s\n", r.test, r.pkg, skipReason(r.output))
		}
	}
	// A skip that is not allowed counts as failed, also in the totals: the
	// run did not test what it was meant to.
	var badSkips int
	fmt.Fprintf(w, "\n=== summary (failed includes tests skipped for want of a server; skipped: left out by SHEDLOCK_SKIP_STORES)\n")
	fmt.Fprintf(w, "%-18s %-5s %7s %7s %7s %8s\n", "module", "", "passed", "failed", "skipped", "time")
	for _, m := range mods {
		status := m.status
		if m.failed > 0 || len(m.pkgFailures) > 0 || len(m.badSkips) > 0 {
			status = "FAIL"
		}
		if status != "ok" {
			failed = true
		}
		mFailed := m.failed + len(m.pkgFailures) + len(m.badSkips)
		fmt.Fprintf(w, "%-18s %-5s %7d %7d %7d %7ss\n", m.name, status, m.passed, mFailed, m.allowedSkips, m.elapsedSeconds)
		passed += m.passed
		failedTests += mFailed
		skipped += m.allowedSkips
		badSkips += len(m.badSkips)
	}
	if badSkips > 0 {
		var left []string
		for s := range allowed {
			left = append(left, s)
		}
		slices.Sort(left)
		fmt.Fprintf(w, "\n%d tests skipped for want of a server, and count as failed: start the servers (scripts/servers)\n"+
			"or leave a store out with SHEDLOCK_SKIP_STORES=mysql,postgres,redis,pgbouncer,galera,etcd,kubernetes,chromium (now %q).\n",
			badSkips, strings.Join(left, ","))
	}
	fmt.Fprintf(w, "\ntotal: %d passed, %d failed, %d skipped\n", passed, failedTests, skipped)
	return failed
}

// tail returns the last n lines of a test's output.
func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("    ... (%d lines before)\n", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}
