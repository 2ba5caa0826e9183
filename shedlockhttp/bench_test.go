package shedlockhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// tenThousand is a store of 10,000 locks, a third held, some paused and
// asked to run, each with a last success.
func tenThousand() controlStore {
	st := newControlStore()
	for i := range 10000 {
		name := fmt.Sprintf("tenant-%05d.nightlyReport", i)
		st.hold(name, fmt.Sprintf("pod-%d#3f9c2b1e7d4a6058.%d", i%7, i), time.Duration(i%3-1)*time.Minute)
		st.fires[name] = time.Now().Add(-time.Hour)
		if i%50 == 0 {
			_ = st.Pause(context.Background(), name, time.Time{})
		}
		if i%70 == 0 {
			_, _ = st.RunNow(context.Background(), name)
		}
	}
	return st
}

// serve runs one request through h, as the server would.
func serve(h http.Handler, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

// The page of a store with 10,000 locks shows the counts of all and one
// page of rows, with actions; its time is logged (the benchmarks measure
// it), never asserted.
func TestTenThousandLocks(t *testing.T) {
	h := shedlockhttp.NewHandler(tenThousand(), quiet, shedlockhttp.WithAuthorize(allowAll))
	serve(h, "/") // the last successes, cached from here on
	start := time.Now()
	w := serve(h, "/")
	took := time.Since(start)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "<b>10000</b> locks") || !strings.Contains(body, "<b>200</b> paused") ||
		strings.Count(body, "<tr data-lock=") != 200 || !strings.Contains(body, "page 1 of 50") {
		t.Fatalf("status %d, %d rows", w.Code, strings.Count(body, "<tr data-lock="))
	}
	t.Logf("the page of 10,000 locks: %v, %d bytes", took, len(body))
	start = time.Now()
	w = serve(h, "/api/locks?limit=10000")
	t.Logf("api/locks?limit=10000: %v, %d bytes", time.Since(start), w.Body.Len())
}

func benchmarkPath(b *testing.B, path string) {
	h := shedlockhttp.NewHandler(tenThousand(), quiet, shedlockhttp.WithAuthorize(allowAll))
	serve(h, path)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if w := serve(h, path); w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkPageTenThousandLocks: the page, and the part the script fetches
// each refresh, with 10,000 locks in the store.
func BenchmarkPageTenThousandLocks(b *testing.B) { benchmarkPath(b, "/") }
func BenchmarkLiveTenThousandLocks(b *testing.B) { benchmarkPath(b, "/live?q=tenant-09&state=held") }

// BenchmarkAPILocksTenThousand: every lock as JSON.
func BenchmarkAPILocksTenThousand(b *testing.B) { benchmarkPath(b, "/api/locks?limit=10000") }
