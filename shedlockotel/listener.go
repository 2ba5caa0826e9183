// Package shedlockotel reports what a shedlock executor's locks do through
// OpenTelemetry: metrics, and a span per run. Listener is a shedlock.Listener:
//
//	l, err := shedlockotel.New() // the global MeterProvider and TracerProvider
//	ex := shedlock.NewExecutor(provider, shedlock.WithListener(l))
//
// Every measurement has the attribute shedlock.lock.name (one value per job, a
// bounded set). One Listener may serve several executors.
//
//	shedlock.attempts            {attempt}      runs begun
//	shedlock.acquisitions        {acquisition}  locks taken
//	shedlock.skips               {skip}         runs skipped; shedlock.skip.reason: held_elsewhere, running_here
//	shedlock.store.errors        {error}        failures to take a lock (the task did not run)
//	shedlock.run.duration        s              task run time; shedlock.run.result: ok, error, panic, cancelled
//	shedlock.runs.active         {run}          locks taken and not yet released
//	shedlock.lock.hold.duration  s              from the attempt's start to the release
//	shedlock.release.errors      {error}        releases that failed (the lock stays until its end)
//	shedlock.extensions          {extension}    extensions, by keep-alive or by the task
//	shedlock.extension.errors    {error}        extensions that failed and will be retried
//	shedlock.lock.losses         {loss}         tasks whose lock ended under them; shedlock.loss.reason: lost, expired
//	shedlock.events.dropped      {event}        events dropped, whole runs at a time, because listeners fell behind
//	shedlock.leader              {leader}       1 while this instance leads the group (a shedlock.Leader's lease name)
//	shedlock.catch_up.runs       {run}          CatchUp runs of a fire time missed or failed (shedlock.EventCatchUp)
//	shedlock.fire_times.missed   {fire_time}    CatchUp fire times past their window with no run that succeeded
//
// Give the same Listener to a shedlock.Leader (shedlock.WithLeaderListener)
// for shedlock.leader; the leader's events start no span.
//
// Each run whose lock was taken is a span named "shedlock " + the lock's name,
// from the attempt's start to the release, a child of the span in the context
// the run was started with (none for cron and fixed-delay jobs). Extensions,
// failed extensions and a lost or expired lock are span events; a task error, a
// panic, a lost lock and a failed release set the span's status to Error.
// Listeners receive events after the fact, so the span is not in the task's own
// context: spans the task starts are its siblings.
//
// Each option checks its own value: New returns a bad value, or a nil option, as
// an error wrapping shedlock.ErrInvalidOption that names the option (a nil one
// by its position, counting from 0).
package shedlockotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/apply"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/shedlock-go/shedlock/shedlockotel"

// Attribute keys.
const (
	LockNameKey   = attribute.Key("shedlock.lock.name")
	SkipReasonKey = attribute.Key("shedlock.skip.reason")
	RunResultKey  = attribute.Key("shedlock.run.result")
	LossReasonKey = attribute.Key("shedlock.loss.reason")
)

// DefaultBuckets are the duration histograms' bucket boundaries, in seconds:
// from 10ms, for jobs of a few statements, to an hour, for nightly batches.
var DefaultBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}

// Option configures a Listener; see the package doc for how a bad one is reported.
type Option func(*config) error

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	buckets []float64
}

// WithMeterProvider sets where metrics go. Default: otel.GetMeterProvider().
// A nil mp is an invalid option.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return fmt.Errorf("%w: shedlockotel.WithMeterProvider: nil MeterProvider", shedlock.ErrInvalidOption)
		}
		c.meters = mp
		return nil
	}
}

// WithTracerProvider sets where spans go. Default: otel.GetTracerProvider().
// A nil tp is an invalid option.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return fmt.Errorf("%w: shedlockotel.WithTracerProvider: nil TracerProvider", shedlock.ErrInvalidOption)
		}
		c.tracers = tp
		return nil
	}
}

// WithBuckets sets the duration histograms' bucket boundaries, in seconds: at
// least one, finite, in increasing order. Default DefaultBuckets. The slice is
// copied.
func WithBuckets(buckets []float64) Option {
	return func(c *config) error {
		if err := checkBuckets(buckets); err != nil {
			return fmt.Errorf("%w: shedlockotel.WithBuckets: %w", shedlock.ErrInvalidOption, err)
		}
		c.buckets = slices.Clone(buckets)
		return nil
	}
}

func checkBuckets(b []float64) error {
	if len(b) == 0 {
		return errors.New("no buckets")
	}
	for i, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("bucket %d is %v", i, v)
		}
		if i > 0 && v <= b[i-1] {
			return fmt.Errorf("buckets not increasing: %v, then %v", b[i-1], v)
		}
	}
	return nil
}

// Listener records an executor's lock events as OpenTelemetry metrics and spans.
type Listener struct {
	tracer trace.Tracer

	attempts        metric.Int64Counter
	acquisitions    metric.Int64Counter
	skips           metric.Int64Counter
	storeErrors     metric.Int64Counter
	runDuration     metric.Float64Histogram
	active          metric.Int64UpDownCounter
	held            metric.Float64Histogram
	releaseErrors   metric.Int64Counter
	extensions      metric.Int64Counter
	extensionErrors metric.Int64Counter
	losses          metric.Int64Counter
	dropped         metric.Int64Counter
	leading         metric.Int64UpDownCounter
	catchUps        metric.Int64Counter
	missed          metric.Int64Counter

	mu    sync.Mutex
	spans map[shedlock.RunID]trace.Span // runs whose lock is taken and not yet released
}

// New returns a listener whose instruments are made. A bad or nil option is an
// error wrapping shedlock.ErrInvalidOption; an error from the meter provider is
// returned as it is.
func New(opts ...Option) (*Listener, error) {
	c := config{buckets: DefaultBuckets}
	if err := apply.Options("shedlockotel.New", &c, opts); err != nil {
		return nil, err
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	if c.tracers == nil {
		c.tracers = otel.GetTracerProvider()
	}
	m := c.meters.Meter(ScopeName)
	l := &Listener{tracer: c.tracers.Tracer(ScopeName), spans: make(map[shedlock.RunID]trace.Span)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		i, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		i, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(c.buckets...))
		errs = append(errs, err)
		return i
	}
	l.attempts = counter("shedlock.attempts", "{attempt}", "Runs begun: each tries its lock, or finds the job still running here.")
	l.acquisitions = counter("shedlock.acquisitions", "{acquisition}", "Locks taken: runs whose task ran.")
	l.skips = counter("shedlock.skips", "{skip}", "Runs skipped because the lock is held: elsewhere, or by this executor's run still going.")
	l.storeErrors = counter("shedlock.store.errors", "{error}", "Runs whose lock could not be taken because the store failed; the task did not run.")
	l.runDuration = histogram("shedlock.run.duration", "How long tasks ran, by result.")
	active, err := m.Int64UpDownCounter("shedlock.runs.active", metric.WithUnit("{run}"),
		metric.WithDescription("Locks taken and not yet released."))
	errs = append(errs, err)
	l.active = active
	leading, err := m.Int64UpDownCounter("shedlock.leader", metric.WithUnit("{leader}"),
		metric.WithDescription("1 while this instance leads the group, 0 otherwise."))
	errs = append(errs, err)
	l.leading = leading
	l.held = histogram("shedlock.lock.hold.duration", "How long locks were held, from the attempt's start to the release.")
	l.releaseErrors = counter("shedlock.release.errors", "{error}", "Releases that failed; the lock stays held until its end.")
	l.extensions = counter("shedlock.extensions", "{extension}", "Locks extended while their task ran, by keep-alive or by the task.")
	l.extensionErrors = counter("shedlock.extension.errors", "{error}", "Extensions that failed without the lock being lost; keep-alive retries them.")
	l.losses = counter("shedlock.lock.losses", "{loss}", "Tasks whose lock ended under them: lost, or expired without keep-alive.")
	l.dropped = counter("shedlock.events.dropped", "{event}", "Lock events dropped, whole runs at a time, because listeners fell behind; the other metrics miss those runs.")
	l.catchUps = counter("shedlock.catch_up.runs", "{run}", "CatchUp runs: locks taken for a fire time missed while no instance was up, or whose run failed.")
	l.missed = counter("shedlock.fire_times.missed", "{fire_time}", "CatchUp fire times that passed their window with no run that succeeded, counted by each instance that found them.")
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// OnEvent implements shedlock.Listener.
func (l *Listener) OnEvent(ctx context.Context, ev shedlock.Event) {
	lock := LockNameKey.String(ev.Config.Name)
	attrs := metric.WithAttributes(lock)
	bg := context.Background() // ctx may have ended: measurements need only its values
	if ctx != nil {
		bg = context.WithoutCancel(ctx)
	}
	switch ev.Kind {
	case shedlock.EventAttempt:
		l.attempts.Add(bg, 1, attrs)
	case shedlock.EventSkipped:
		l.skips.Add(bg, 1, metric.WithAttributes(lock, SkipReasonKey.String(ev.Skip.String())))
	case shedlock.EventStoreError:
		l.storeErrors.Add(bg, 1, attrs)
	case shedlock.EventAcquired:
		l.acquisitions.Add(bg, 1, attrs)
		l.active.Add(bg, 1, attrs)
		l.startSpan(bg, ev, lock)
	case shedlock.EventExtended:
		l.extensions.Add(bg, 1, attrs)
		l.spanEvent(ev, "shedlock.extended", nil)
	case shedlock.EventExtendFailed:
		l.extensionErrors.Add(bg, 1, attrs)
		l.spanEvent(ev, "shedlock.extend_failed", ev.Err)
	case shedlock.EventLost, shedlock.EventExpired:
		reason := "lost"
		if ev.Kind == shedlock.EventExpired {
			reason = "expired"
		}
		l.losses.Add(bg, 1, metric.WithAttributes(lock, LossReasonKey.String(reason)))
		l.spanEvent(ev, "shedlock.lock."+reason, ev.Err)
	case shedlock.EventFinished:
		l.runDuration.Record(bg, ev.Duration.Seconds(), metric.WithAttributes(lock, RunResultKey.String(ev.Result.String())))
		l.finishSpan(ev)
	case shedlock.EventReleased, shedlock.EventReleaseFailed:
		l.held.Record(bg, ev.Duration.Seconds(), attrs)
		l.active.Add(bg, -1, attrs)
		if ev.Kind == shedlock.EventReleaseFailed {
			l.releaseErrors.Add(bg, 1, attrs)
		}
		l.endSpan(ev)
	case shedlock.EventLeadershipGained:
		l.leading.Add(bg, 1, attrs)
	case shedlock.EventLeadershipLost:
		l.leading.Add(bg, -1, attrs)
	case shedlock.EventDropped:
		// The executor drops whole runs: every span open here still gets its end.
		l.dropped.Add(bg, int64(ev.Dropped))
	case shedlock.EventCatchUp:
		l.catchUps.Add(bg, 1, attrs)
		l.spanEvent(ev, "shedlock.catch_up", nil)
	case shedlock.EventMissedFireTime:
		l.missed.Add(bg, 1, attrs)
	}
}

func (l *Listener) startSpan(ctx context.Context, ev shedlock.Event, lock attribute.KeyValue) {
	_, span := l.tracer.Start(ctx, "shedlock "+ev.Config.Name,
		trace.WithTimestamp(ev.Time.Add(-ev.Duration)), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(lock))
	l.mu.Lock()
	l.spans[ev.Run] = span
	l.mu.Unlock()
}

func (l *Listener) span(run shedlock.RunID, end bool) trace.Span {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.spans[run]
	if end {
		delete(l.spans, run)
	}
	return s
}

func (l *Listener) spanEvent(ev shedlock.Event, name string, err error) {
	s := l.span(ev.Run, false)
	if s == nil {
		return
	}
	opts := []trace.EventOption{trace.WithTimestamp(ev.Time)}
	if !ev.Until.IsZero() {
		opts = append(opts, trace.WithAttributes(attribute.String("shedlock.lock.until", ev.Until.UTC().Format("2006-01-02T15:04:05.000Z"))))
	}
	if err != nil {
		opts = append(opts, trace.WithAttributes(attribute.String("exception.message", err.Error())))
	}
	s.AddEvent(name, opts...)
	if ev.Kind == shedlock.EventLost || ev.Kind == shedlock.EventExpired {
		s.SetStatus(codes.Error, err.Error())
	}
}

func (l *Listener) finishSpan(ev shedlock.Event) {
	s := l.span(ev.Run, false)
	if s == nil {
		return
	}
	s.SetAttributes(RunResultKey.String(ev.Result.String()))
	if ev.Result == shedlock.TaskFailed || ev.Result == shedlock.TaskPanicked {
		s.RecordError(ev.Err, trace.WithTimestamp(ev.Time))
		s.SetStatus(codes.Error, ev.Err.Error())
	}
}

func (l *Listener) endSpan(ev shedlock.Event) {
	s := l.span(ev.Run, true)
	if s == nil {
		return
	}
	if ev.Kind == shedlock.EventReleaseFailed {
		s.RecordError(ev.Err, trace.WithTimestamp(ev.Time))
		s.SetStatus(codes.Error, "release failed: "+ev.Err.Error())
	}
	s.End(trace.WithTimestamp(ev.Time))
}

var _ shedlock.Listener = (*Listener)(nil)
