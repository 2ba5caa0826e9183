// Package shedlockprom exports what a shedlock executor's locks do as Prometheus
// metrics. Metrics is a shedlock.Listener and a prometheus.Collector:
//
//	m := shedlockprom.New()
//	prometheus.MustRegister(m)
//	ex := shedlock.NewExecutor(provider, shedlock.WithListener(m))
//
// Every metric has the label lock (the lock's name: one value per job, a bounded
// set). One Metrics may serve several executors.
//
// Each option checks its own value. A bad value, or a nil option, is an error
// wrapping shedlock.ErrInvalidOption that names the option (a nil one by its
// position, counting from 0): NewMetrics returns it, and New panics with it, as
// regexp.MustCompile does with a bad pattern.
//
//	shedlock_attempts_total{lock}                  runs begun
//	shedlock_acquisitions_total{lock}              locks taken
//	shedlock_skips_total{lock,reason}              runs skipped: held_elsewhere, running_here
//	shedlock_store_errors_total{lock}              failures to take a lock (the task did not run)
//	shedlock_run_duration_seconds{lock,result}     task run time; result: ok, error, panic, cancelled
//	shedlock_runs_in_progress{lock}                locks taken and not yet released
//	shedlock_lock_held_seconds{lock}               from the attempt's start to the release
//	shedlock_release_errors_total{lock}            releases that failed (the lock stays until its end)
//	shedlock_extensions_total{lock}                extensions, by keep-alive or by the task
//	shedlock_extension_errors_total{lock}          extensions that failed and will be retried
//	shedlock_lock_losses_total{lock,reason}        tasks whose lock ended under them: lost, expired
//	shedlock_dropped_events_total                  events dropped, whole runs at a time, because listeners fell behind
//	shedlock_leader{lock}                          1 while this instance leads the group (a shedlock.Leader's lease name)
//	shedlock_catch_up_runs_total{lock}             CatchUp runs of a fire time missed or failed (shedlock.EventCatchUp)
//	shedlock_missed_fire_times_total{lock}         CatchUp fire times past their window with no run that succeeded
//
// Give the same Metrics to a shedlock.Leader (shedlock.WithLeaderListener) for
// shedlock_leader.
package shedlockprom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/apply"
)

// DefaultBuckets are the histograms' buckets, in seconds: from 10ms, for jobs of
// a few statements, to an hour, for nightly batches.
var DefaultBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}

// Option configures Metrics; see the package doc for how a bad one is reported.
type Option func(*options) error

type options struct {
	buckets []float64
}

// WithBuckets sets the buckets, in seconds, of the run duration and lock held
// histograms: at least one, in increasing order (a last +Inf is allowed and
// implied anyway). Default DefaultBuckets. The slice is copied.
func WithBuckets(buckets []float64) Option {
	return func(o *options) error {
		if err := checkBuckets(buckets); err != nil {
			return fmt.Errorf("%w: shedlockprom.WithBuckets: %w", shedlock.ErrInvalidOption, err)
		}
		o.buckets = slices.Clone(buckets)
		return nil
	}
}

func checkBuckets(b []float64) error {
	if len(b) == 0 {
		return errors.New("no buckets")
	}
	for i, v := range b {
		if math.IsNaN(v) {
			return fmt.Errorf("bucket %d is NaN", i)
		}
		if i > 0 && v <= b[i-1] {
			return fmt.Errorf("buckets not increasing: %v, then %v", b[i-1], v)
		}
	}
	return nil
}

// Metrics counts an executor's lock events. Register it with a Prometheus
// registry and pass it to shedlock.WithListener.
type Metrics struct {
	attempts        *prometheus.CounterVec
	acquisitions    *prometheus.CounterVec
	skips           *prometheus.CounterVec
	storeErrors     *prometheus.CounterVec
	runDuration     *prometheus.HistogramVec
	inProgress      *prometheus.GaugeVec
	held            *prometheus.HistogramVec
	releaseErrors   *prometheus.CounterVec
	extensions      *prometheus.CounterVec
	extensionErrors *prometheus.CounterVec
	losses          *prometheus.CounterVec
	dropped         prometheus.Counter
	leader          *prometheus.GaugeVec
	catchUps        *prometheus.CounterVec
	missed          *prometheus.CounterVec
}

// New returns the metrics, unregistered. A bad or nil option panics with an
// error wrapping shedlock.ErrInvalidOption; NewMetrics returns it instead.
func New(opts ...Option) *Metrics {
	m, err := newMetrics("New", opts)
	if err != nil {
		panic(err)
	}
	return m
}

// NewMetrics returns the metrics, unregistered, or an error wrapping
// shedlock.ErrInvalidOption for a bad or nil option.
func NewMetrics(opts ...Option) (*Metrics, error) { return newMetrics("NewMetrics", opts) }

// newMetrics is New and NewMetrics; ctor names the one called, in errors.
func newMetrics(ctor string, opts []Option) (*Metrics, error) {
	o := options{buckets: DefaultBuckets}
	if err := apply.Options("shedlockprom."+ctor, &o, opts); err != nil {
		return nil, err
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "shedlock", Name: name, Help: help},
			append([]string{"lock"}, labels...))
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "shedlock", Name: name, Help: help,
			Buckets: o.buckets}, append([]string{"lock"}, labels...))
	}
	m := &Metrics{
		attempts:     counter("attempts_total", "Runs begun: each tries its lock, or finds the job still running here."),
		acquisitions: counter("acquisitions_total", "Locks taken: runs whose task ran."),
		skips: counter("skips_total", "Runs skipped because the lock is held: elsewhere (held_elsewhere) "+
			"or by this executor's run still going (running_here).", "reason"),
		storeErrors: counter("store_errors_total", "Runs whose lock could not be taken because the store failed; the task did not run."),
		runDuration: histogram("run_duration_seconds", "How long tasks ran, by result: ok, error, panic, cancelled.", "result"),
		inProgress: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "shedlock", Name: "runs_in_progress",
			Help: "Locks taken and not yet released."}, []string{"lock"}),
		held:            histogram("lock_held_seconds", "How long locks were held, from the attempt's start to the release."),
		releaseErrors:   counter("release_errors_total", "Releases that failed; the lock stays held until its end."),
		extensions:      counter("extensions_total", "Locks extended while their task ran, by keep-alive or by the task."),
		extensionErrors: counter("extension_errors_total", "Extensions that failed without the lock being lost; keep-alive retries them."),
		losses: counter("lock_losses_total", "Tasks whose lock ended under them: lost (taken away, or keep-alive "+
			"could not extend it in time) or expired (LockAtMostFor ran out without keep-alive).", "reason"),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shedlock", Name: "dropped_events_total",
			Help: "Lock events dropped, whole runs at a time, because listeners fell behind; the other metrics miss those runs."}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "shedlock", Name: "leader",
			Help: "1 while this instance leads the group (a shedlock.Leader's lease), 0 otherwise."}, []string{"lock"}),
		catchUps: counter("catch_up_runs_total", "CatchUp runs: locks taken for a fire time missed while no instance "+
			"was up, or whose run failed."),
		missed: counter("missed_fire_times_total", "CatchUp fire times that passed their window with no run that "+
			"succeeded, counted by each instance that found them."),
	}
	return m, nil
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.attempts, m.acquisitions, m.skips, m.storeErrors, m.runDuration, m.inProgress,
		m.held, m.releaseErrors, m.extensions, m.extensionErrors, m.losses, m.dropped, m.leader, m.catchUps, m.missed}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// OnEvent implements shedlock.Listener.
func (m *Metrics) OnEvent(_ context.Context, ev shedlock.Event) {
	lock := ev.Config.Name
	switch ev.Kind {
	case shedlock.EventAttempt:
		m.attempts.WithLabelValues(lock).Inc()
	case shedlock.EventSkipped:
		m.skips.WithLabelValues(lock, ev.Skip.String()).Inc()
	case shedlock.EventStoreError:
		m.storeErrors.WithLabelValues(lock).Inc()
	case shedlock.EventAcquired:
		m.acquisitions.WithLabelValues(lock).Inc()
		m.inProgress.WithLabelValues(lock).Inc()
	case shedlock.EventExtended:
		m.extensions.WithLabelValues(lock).Inc()
	case shedlock.EventExtendFailed:
		m.extensionErrors.WithLabelValues(lock).Inc()
	case shedlock.EventLost:
		m.losses.WithLabelValues(lock, "lost").Inc()
	case shedlock.EventExpired:
		m.losses.WithLabelValues(lock, "expired").Inc()
	case shedlock.EventFinished:
		m.runDuration.WithLabelValues(lock, ev.Result.String()).Observe(ev.Duration.Seconds())
	case shedlock.EventReleased:
		m.held.WithLabelValues(lock).Observe(ev.Duration.Seconds())
		m.inProgress.WithLabelValues(lock).Dec()
	case shedlock.EventLeadershipGained:
		m.leader.WithLabelValues(lock).Set(1)
	case shedlock.EventLeadershipLost:
		m.leader.WithLabelValues(lock).Set(0)
	case shedlock.EventReleaseFailed:
		m.releaseErrors.WithLabelValues(lock).Inc()
		m.held.WithLabelValues(lock).Observe(ev.Duration.Seconds())
		m.inProgress.WithLabelValues(lock).Dec()
	case shedlock.EventDropped:
		m.dropped.Add(float64(ev.Dropped))
	case shedlock.EventCatchUp:
		m.catchUps.WithLabelValues(lock).Inc()
	case shedlock.EventMissedFireTime:
		m.missed.WithLabelValues(lock).Inc()
	}
}

var (
	_ shedlock.Listener    = (*Metrics)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)
