package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// A tiny run end to end, so that the command cannot rot: every step, the cold
// start, both stores and the chart. No figure is checked, only that they appear.
func TestRunSmall(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "chart.svg")
	cfg := config{
		dsn: testdb.MySQLDSN(t), pods: []int{1, 3}, names: []int{1, 5},
		step: 50 * time.Millisecond, floorTime: 50 * time.Millisecond, mostFor: time.Minute,
		cold: 20, chart: chart,
	}
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "## MariaDB") && !strings.Contains(out.String(), "## MySQL") {
		t.Errorf("output lacks the server's table:\n%s", out.String())
	}
	for _, want := range []string{"## SQLite", "| 5 | 3 |", "second (UPDATE)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if fi, err := os.Stat(chart); err != nil || fi.Size() == 0 {
		t.Errorf("chart not written: %v", err)
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-pods", "1,x"}); err == nil {
		t.Error("-pods 1,x accepted")
	}
	c, err := parseFlags([]string{"-pods", "2, 4", "-names", "7"})
	if err != nil || len(c.pods) != 2 || c.pods[1] != 4 || c.names[0] != 7 {
		t.Errorf("parseFlags = %+v, %v", c, err)
	}
}

// The herd's pods are this test binary, run again with herdPodEnv set.
func TestMain(m *testing.M) {
	if spec := os.Getenv(herdPodEnv); spec != "" {
		os.Exit(podMain(spec))
	}
	os.Exit(m.Run())
}

// A tiny herd end to end on the servers the tests use: pods as processes, both
// sides, every store, the table and the chart.
func TestHerdSmall(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "herd.svg")
	cfg, err := parseHerdFlags([]string{"-shared", "-scales", "2x20", "-ticks", "1", "-least", "200ms", "-chart", chart})
	if err != nil {
		t.Fatal(err)
	}
	cfg.mysqlDSN, cfg.postgresDSN, cfg.redisAddr = testdb.MySQLDSN(t), testdb.PostgresDSN(t), testdb.RedisAddr(t)
	var out bytes.Buffer
	if err := runHerd(context.Background(), cfg, &out); err != nil {
		t.Fatalf("runHerd: %v\n%s", err, out.String())
	}
	for _, want := range []string{"## MariaDB", "## PostgreSQL", "## Redis", "| 2 × 20 | 8 | library |", "| 2 × 20 | 5 | floor |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if fi, err := os.Stat(chart); err != nil || fi.Size() == 0 {
		t.Errorf("chart not written: %v", err)
	}
}
