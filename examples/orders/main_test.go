package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/examples/orders/shop"
)

// syncBuffer is a log the test reads while the pod writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A pod serves its lock metrics at the URL it logs: both jobs' runs show, the
// outbox job's among them.
func TestPodServesMetrics(t *testing.T) {
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{driver: shop.SQLite, dsn: filepath.Join(t.TempDir(), "orders.db"), pod: "pod-1",
			speedup: 600, orderTimeout: time.Second, latency: time.Millisecond, load: 10 * time.Millisecond,
			metrics: "127.0.0.1:0"}, log)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	})

	urlLine := regexp.MustCompile(`msg=metrics url=(\S+)`)
	var url string
	want := []string{
		`shedlock_acquisitions_total{lock="outboxPollingJob"}`,
		`shedlock_acquisitions_total{lock="orderTimeoutCancelJob"}`,
		`shedlock_run_duration_seconds_count{lock="outboxPollingJob",result="ok"}`,
		`# TYPE shedlock_runs_in_progress gauge`,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if url == "" {
			if m := urlLine.FindStringSubmatch(logs.String()); m != nil {
				url = m[1]
			}
		}
		var body string
		if url != "" {
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
			}
		}
		if url != "" && missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics at %q lack %q within 30s:\n%s\nlog:\n%s", url, missing, body, logs)
		}
		time.Sleep(50 * time.Millisecond) // a poll interval
	}
}
