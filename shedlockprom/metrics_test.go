package shedlockprom_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockprom"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

var job = shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

// setup returns an executor on p whose metrics reg gathers.
func setup(t *testing.T, p shedlock.LockProvider, opts ...shedlock.ExecutorOption) (*shedlock.Executor, *prometheus.Registry) {
	t.Helper()
	m := shedlockprom.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	quiet := shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler))
	return shedlock.NewExecutor(p, append([]shedlock.ExecutorOption{shedlock.WithListener(m), quiet}, opts...)...), reg
}

// values gathers reg into "name{label=value,...}" -> value; a histogram gives
// its sample count as name_count{...} and a sum > 0 as name_sum{...} = 1.
func values(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(labels)
			key := "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[mf.GetName()+key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[mf.GetName()+key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[mf.GetName()+"_count"+key] = float64(m.GetHistogram().GetSampleCount())
				if m.GetHistogram().GetSampleSum() > 0 {
					out[mf.GetName()+"_sum"+key] = 1
				}
			}
		}
	}
	return out
}

func assertValues(t *testing.T, reg prometheus.Gatherer, want map[string]float64) {
	t.Helper()
	got := values(t, reg)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %v", k, v)
		}
	}
}

func stop(t *testing.T, ex *shedlock.Executor) {
	t.Helper()
	if err := ex.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestAcquiredAndRun(t *testing.T) {
	ex, reg := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	if _, err := ex.Run(context.Background(), job, func(context.Context) error { time.Sleep(time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	stop(t, ex)
	assertValues(t, reg, map[string]float64{
		"shedlock_attempts_total{lock=job}":                       1,
		"shedlock_acquisitions_total{lock=job}":                   1,
		"shedlock_run_duration_seconds_count{lock=job,result=ok}": 1,
		"shedlock_run_duration_seconds_sum{lock=job,result=ok}":   1,
		"shedlock_lock_held_seconds_count{lock=job}":              1,
		"shedlock_lock_held_seconds_sum{lock=job}":                1,
		"shedlock_runs_in_progress{lock=job}":                     0,
		"shedlock_dropped_events_total{}":                         0,
	})
}

func TestSkippedHeldElsewhere(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	if _, err := store.Provider("other").TryLock(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	ex, reg := setup(t, store.Provider("a"))
	for range 3 {
		if ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil }); ran || err != nil {
			t.Fatalf("Run: %v, %v", ran, err)
		}
	}
	stop(t, ex)
	assertValues(t, reg, map[string]float64{
		"shedlock_attempts_total{lock=job}":                    3,
		"shedlock_skips_total{lock=job,reason=held_elsewhere}": 3,
		"shedlock_dropped_events_total{}":                      0,
	})
}

type downProvider struct{ err error }

func (p downProvider) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	return nil, p.err
}

func TestStoreDown(t *testing.T) {
	ex, reg := setup(t, downProvider{errors.New("dial tcp: connection refused")})
	if _, err := ex.Run(context.Background(), job, func(context.Context) error { return nil }); err == nil {
		t.Fatal("Run: want the store's error")
	}
	stop(t, ex)
	assertValues(t, reg, map[string]float64{
		"shedlock_attempts_total{lock=job}":     1,
		"shedlock_store_errors_total{lock=job}": 1,
		"shedlock_dropped_events_total{}":       0,
	})
}

func TestTaskErrorAndPanic(t *testing.T) {
	ex, reg := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	_, _ = ex.Run(context.Background(), job, func(context.Context) error { return errors.New("boom") })
	_, _ = ex.Run(context.Background(), job, func(context.Context) error { return errors.New("boom") })
	_, _ = ex.Run(context.Background(), job, func(context.Context) error { panic("kaboom") })
	stop(t, ex)
	assertValues(t, reg, map[string]float64{
		"shedlock_attempts_total{lock=job}":                          3,
		"shedlock_acquisitions_total{lock=job}":                      3,
		"shedlock_run_duration_seconds_count{lock=job,result=error}": 2,
		"shedlock_run_duration_seconds_sum{lock=job,result=error}":   1,
		"shedlock_run_duration_seconds_count{lock=job,result=panic}": 1,
		"shedlock_run_duration_seconds_sum{lock=job,result=panic}":   1,
		"shedlock_lock_held_seconds_count{lock=job}":                 3,
		"shedlock_lock_held_seconds_sum{lock=job}":                   1,
		"shedlock_runs_in_progress{lock=job}":                        0,
		"shedlock_dropped_events_total{}":                            0,
	})
}

// A run in progress shows in the gauge; Stop cancels it, which is no error.
func TestStop(t *testing.T) {
	ex, reg := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	running := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ex.Run(context.Background(), job, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-running
	// The Acquired event reaches the listener shortly after the task starts.
	deadline := time.Now().Add(10 * time.Second)
	for values(t, reg)["shedlock_runs_in_progress{lock=job}"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("runs_in_progress never 1")
		}
		time.Sleep(time.Millisecond) // a poll interval
	}
	stop(t, ex)
	<-done
	assertValues(t, reg, map[string]float64{
		"shedlock_attempts_total{lock=job}":                              1,
		"shedlock_acquisitions_total{lock=job}":                          1,
		"shedlock_run_duration_seconds_count{lock=job,result=cancelled}": 1,
		"shedlock_run_duration_seconds_sum{lock=job,result=cancelled}":   1,
		"shedlock_lock_held_seconds_count{lock=job}":                     1,
		"shedlock_lock_held_seconds_sum{lock=job}":                       1,
		"shedlock_runs_in_progress{lock=job}":                            0,
		"shedlock_dropped_events_total{}":                                0,
	})
}

// lossyProvider's locks extend once, then are found lost.
type lossyProvider struct{ shedlock.LockProvider }

func (p lossyProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &lossyLock{Lock: l}, nil
}

type lossyLock struct {
	shedlock.Lock
	n int
}

func (l *lossyLock) Extend(ctx context.Context, most, least time.Duration) error {
	l.n++
	switch l.n {
	case 1:
		return l.Lock.Extend(ctx, most, least)
	case 2:
		return errors.New("connection reset")
	}
	return shedlock.ErrLockLost
}

func TestKeepAliveExtendedThenLost(t *testing.T) {
	ex, reg := setup(t, lossyProvider{shedlocktest.NewMemoryStore().Provider("a")}, shedlock.WithKeepAlive())
	cfg := shedlock.LockConfig{Name: "kept", LockAtMostFor: 90 * time.Millisecond}
	_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Run: %v", err)
	}
	_, _ = ex.RunWith(context.Background(), shedlock.LockConfig{Name: "short", LockAtMostFor: 20 * time.Millisecond},
		func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, shedlock.KeepAlive(false))
	stop(t, ex)
	assertValues(t, reg, map[string]float64{
		"shedlock_attempts_total{lock=kept}":                           1,
		"shedlock_acquisitions_total{lock=kept}":                       1,
		"shedlock_extensions_total{lock=kept}":                         1,
		"shedlock_extension_errors_total{lock=kept}":                   1,
		"shedlock_lock_losses_total{lock=kept,reason=lost}":            1,
		"shedlock_run_duration_seconds_count{lock=kept,result=error}":  1,
		"shedlock_run_duration_seconds_sum{lock=kept,result=error}":    1,
		"shedlock_lock_held_seconds_count{lock=kept}":                  1,
		"shedlock_lock_held_seconds_sum{lock=kept}":                    1,
		"shedlock_runs_in_progress{lock=kept}":                         0,
		"shedlock_attempts_total{lock=short}":                          1,
		"shedlock_acquisitions_total{lock=short}":                      1,
		"shedlock_lock_losses_total{lock=short,reason=expired}":        1,
		"shedlock_run_duration_seconds_count{lock=short,result=error}": 1,
		"shedlock_run_duration_seconds_sum{lock=short,result=error}":   1,
		"shedlock_lock_held_seconds_count{lock=short}":                 1,
		"shedlock_lock_held_seconds_sum{lock=short}":                   1,
		"shedlock_runs_in_progress{lock=short}":                        0,
		"shedlock_dropped_events_total{}":                              0,
	})
}

// A scrape over HTTP shows the metrics with their help, types and names as
// Prometheus conventions have them.
func TestScrape(t *testing.T) {
	ex, reg := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	if _, err := ex.Run(context.Background(), job, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	stop(t, ex)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"# TYPE shedlock_attempts_total counter",
		`shedlock_attempts_total{lock="job"} 1`,
		"# TYPE shedlock_run_duration_seconds histogram",
		`shedlock_run_duration_seconds_bucket{lock="job",result="ok",le="0.01"} 1`,
		`shedlock_run_duration_seconds_count{lock="job",result="ok"} 1`,
		"# TYPE shedlock_runs_in_progress gauge",
		`shedlock_runs_in_progress{lock="job"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
}
