package shedlock

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule adds task to c under spec (parsed by c's parser) so that each fire
// time of spec runs at most once across all instances, whatever their start
// times, with cfg.LockAtLeastFor left at 0.
//
// Each run takes the lock as Run does, and holds it, in the store's time, until
// the skew bound (ClockSkew, default 500ms) before the instance's next fire
// time: its LockAtLeastFor is next - now - skew, and its LockAtMostFor the
// larger of that and cfg.LockAtMostFor: a run is never cut off before its
// LockAtMostFor, and a holder that dies mid-run keeps the lock until then, so
// the fire times within it are skipped (with CatchUp, one run makes up for
// them). A LockAtMostFor a little above the longest run, and below the
// interval, loses no fire time to a dead holder. Within the bound this gives:
//
//   - At most once per fire time: instances whose clocks differ by less than the
//     skew bound fire the same time while the first one's lock holds, and find it
//     held. So do instances whose @every schedules started at different moments:
//     the holder's lock covers their fire times until just before its own next,
//     so the job runs once per interval across the fleet, not once per instance.
//   - None skipped while any instance is up, for fixed-time specs (every fire time
//     is each instance's): the lock is free the skew bound before the next fire
//     time on the holder's clock, before any instance fires it. Runs must end
//     before the next fire time: one still running holds the lock, and that fire
//     time is skipped, as with WithLock.
//
// The bound needs the interval between fire times to exceed twice the skew
// bound; a run's hold is then at least the interval less the bound. Schedule
// refuses a spec whose fire times come closer (@every 1s with the default
// bound): for a spec with uneven gaps, the smallest among its next 1,000 fire
// times, or a year of them if that ends first. It sends the statements of Run,
// no more: any table works, Java ShedLock's included.
//
// A store that keeps a lock for coarser times than asked (etcd: leases of
// whole seconds, 2s at least) says how it rounds by implementing
// HoldGranularity (which may ask the store: shedlocketcd learns the cluster's
// minimum TTL at the first call). Schedule then asks for the largest hold the
// store keeps no later than the skew bound before the next fire time (whole
// seconds, rounded down, on etcd), and refuses a spec whose fire times are too
// close for a hold that outlasts the bound (on etcd at the default bound and
// minimum TTL, those less than 3s apart), naming the interval that works.
//
// A run cron calls so late that no hold the store keeps, counted from the
// call, ends the skew bound before the next fire time (within the bound of it,
// or, on etcd, with less than the minimum TTL left) is skipped as late
// (SkipLate), as one past its fire time's window is: it never runs with no
// hold, which would let it take the lock an on-time run's hold has just freed
// and run the fire time again, nor with one the store keeps past the next
// fire time.
//
// The schedule is the one c parses from spec (robfig/cron has no parser of its
// own to ask): c.AddJob parses it, and Schedule reads it back with c.Entry. So a
// cron made with cron.WithSeconds() takes six fields, and cron.WithLocation sets
// the zone of the fire times.
//
// cfg.Name is registered on e while the returned entry is in c. Once it has been
// removed (c.Remove), a later Schedule, WithLock, Wrap or FixedDelay may
// register the name again, as when a service reconfigures its jobs; cron no
// longer calls the removed job, and a run of it still under way is not joined
// by a run of the new job in this process (that one is skipped, as a run of a
// name still running here always is).
//
// Errors: ErrInvalidConfig for an invalid cfg, a nonzero LockAtLeastFor, a
// LockAtMostFor not above the skew bound, a spec c cannot parse, or one whose
// fire times are not more than twice the skew bound apart, or too close for
// the store's HoldGranularity; ErrInvalidJob for a
// nil c or task; ErrInvalidOption for a nil or bad job option or an executor
// made with one; ErrDuplicateName; ErrStopped. Nothing is added to c on error.
// Keep-alive follows the executor's setting unless a KeepAlive option says
// otherwise.
//
// With CatchUp, a fire time missed while no instance was up, or whose run
// failed, runs once when an instance checks, and the store, not the hold,
// keeps each fire time to one run that succeeded: see CatchUp. Its errors add
// ErrInvalidOption for a provider that is not a FireLocker, and
// ErrInvalidConfig for an @every spec.
func (e *Executor) Schedule(c *cron.Cron, spec string, cfg LockConfig,
	task func(context.Context) error, opts ...JobOption) (cron.EntryID, error) {
	switch {
	case c == nil:
		return 0, fmt.Errorf("%w: lock %q: Schedule: nil *cron.Cron", ErrInvalidJob, cfg.Name)
	case task == nil:
		return 0, fmt.Errorf("%w: lock %q: Schedule: nil task", ErrInvalidJob, cfg.Name)
	case cfg.LockAtLeastFor != 0:
		return 0, fmt.Errorf("%w: lock %q: LockAtLeastFor must be 0 with Schedule, which holds each run's lock "+
			"until just before the next fire time itself; got %v", ErrInvalidConfig, cfg.Name, cfg.LockAtLeastFor)
	}
	o, err := e.jobOptions(cfg.Name, opts)
	if err != nil {
		return 0, err
	}
	if !o.skewSet {
		o.skew = DefaultClockSkew
	}
	if cfg.LockAtMostFor <= o.skew {
		return 0, fmt.Errorf("%w: lock %q: LockAtMostFor (%v) must exceed the clock skew bound (%v): instances "+
			"that fire within it must find the lock held", ErrInvalidConfig, cfg.Name, cfg.LockAtMostFor, o.skew)
	}
	fl, retry, err := e.catchUpOf(cfg, o)
	if err != nil {
		return 0, err
	}
	if err := e.register(cfg); err != nil {
		return 0, err
	}
	j := &scheduledJob{e: e, cfg: cfg, task: task, o: o, loc: c.Location(), ready: make(chan struct{})}
	if fl != nil {
		j.cu = &catchUpJob{e: e, cfg: cfg, loc: j.loc, runAt: j.runAt, fl: fl, window: o.catchUp, retry: retry,
			kick: make(chan struct{}, 1), c: c}
	}
	id, err := c.AddJob(spec, j)
	if err != nil {
		e.reg.unregister(cfg.Name)
		return 0, fmt.Errorf("%w: lock %q: spec %q: %w", ErrInvalidConfig, cfg.Name, spec, err)
	}
	j.schedule = c.Entry(id).Schedule
	if err := j.checkSpec(spec); err != nil {
		// Only c parses spec, so the entry is added before its fire times are
		// known; a fire time that comes before it is removed runs nothing.
		j.refused = true
		close(j.ready)
		c.Remove(id)
		e.reg.unregister(cfg.Name)
		return 0, err
	}
	e.reg.recordEntry(cfg.Name, c, id)
	e.runnable(cfg, task, o)
	close(j.ready)
	if j.cu != nil && j.schedule != nil {
		j.cu.id, j.cu.schedule = id, j.schedule
		j.cu.start()
	}
	return id, nil
}

// catchUpOf returns what a CatchUp job needs: the provider's fire-time
// record and the retry period; nil without CatchUp.
func (e *Executor) catchUpOf(cfg LockConfig, o jobOptions) (fl FireLocker, retry time.Duration, err error) {
	if o.catchUp == 0 {
		return nil, 0, nil
	}
	fl, ok := e.provider.(FireLocker)
	if !ok {
		return nil, 0, fmt.Errorf("%w: lock %q: CatchUp needs a provider that records fire times (FireLocker); %T does not",
			ErrInvalidOption, cfg.Name, e.provider)
	}
	retry, err = o.catchUpRetryDelay(cfg.Name)
	return fl, retry, err
}

// checkSpec reports why j's fire times, as its cron parsed spec, cannot be
// served: @every with CatchUp, fire times closer than twice the skew bound,
// or too close for the store's rounding of holds (HoldGranularity).
func (j *scheduledJob) checkSpec(spec string) error {
	p, cfg, skew := j.e.provider, j.cfg, j.o.skew
	if _, every := j.schedule.(cron.ConstantDelaySchedule); every && j.cu != nil {
		return fmt.Errorf("%w: lock %q: spec %q: CatchUp needs fire times the instances share, as a cron "+
			"spec gives; those of @every depend on when each instance started", ErrInvalidConfig, cfg.Name, spec)
	}
	if j.schedule == nil {
		return nil
	}
	need := neededGap(p, skew)
	gap, ok := smallestGap(j.schedule, time.Now().In(j.loc), max(2*skew, need-1))
	switch {
	case ok && gap <= 2*skew:
		return fmt.Errorf("%w: lock %q: spec %q fires %v apart at the closest; Schedule needs more than "+
			"twice the clock skew bound (%v), %v, so that instances whose clocks differ by the bound do not "+
			"both run one fire time: use a spec with a larger interval, or a smaller ClockSkew",
			ErrInvalidConfig, cfg.Name, spec, gap, skew, 2*skew)
	case ok && gap < need:
		step, least := p.(HoldGranularity).HoldGranularity()
		return fmt.Errorf("%w: lock %q: spec %q fires %v apart at the closest; %T keeps a lock in steps "+
			"of %v and for at least %v, so a run's hold, which must end the clock skew bound (%v) before the "+
			"next fire time and outlast the bound, needs fire times at least %v apart: use a spec with a larger "+
			"interval, or a smaller ClockSkew", ErrInvalidConfig, cfg.Name, spec, gap, p, step, least, skew, need)
	}
	return nil
}

// Bounds of the fire times smallestGap looks at. A cron spec is a product of
// field sets, so the gaps of one fired minute, hour or day come back with each:
// the smallest shows within the first few fire times, and 1,000 cover the
// tightest pattern many times over. A year covers every month, day of week and
// daylight-saving change each way, for specs that fire rarely. Either bound
// keeps the check to well under a millisecond of Next calls.
const (
	gapFires   = 1000
	gapHorizon = 366 * 24 * time.Hour
)

// smallestGap returns the smallest interval between consecutive fire times of
// s after now, over gapFires fire times or gapHorizon, whichever ends first.
// It stops early at a gap not above limit, which is refused anyway. ok is
// false when s fires less than twice: there is no gap to check.
func smallestGap(s cron.Schedule, now time.Time, limit time.Duration) (gap time.Duration, ok bool) {
	if d, constant := s.(cron.ConstantDelaySchedule); constant {
		return d.Delay, true
	}
	prev := s.Next(now)
	if prev.IsZero() {
		return 0, false
	}
	end := prev.Add(gapHorizon)
	for range gapFires {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		if d := next.Sub(prev); !ok || d < gap {
			gap, ok = d, true
		}
		if gap <= limit || !next.Before(end) {
			break
		}
		prev = next
	}
	return gap, ok
}

// scheduledJob is one Schedule'd job, as c runs it.
type scheduledJob struct {
	e        *Executor
	cfg      LockConfig
	task     func(context.Context) error
	o        jobOptions
	loc      *time.Location // c's: a time-of-day spec's next fire time is in its zone
	ready    chan struct{}  // closed once schedule and refused are set: c may fire before AddJob returns
	schedule cron.Schedule
	refused  bool        // Schedule refused the spec and removes the entry: run nothing
	cu       *catchUpJob // with CatchUp; nil otherwise
}

// Run takes the lock for this fire time, held until just before the next.
func (j *scheduledJob) Run() {
	<-j.ready
	if j.refused {
		return
	}
	now := time.Now().In(j.loc)
	if j.cu != nil && j.schedule != nil {
		fire := latestFire(j.schedule.Next, now, checkHorizon)
		if fire.IsZero() {
			fire = now
		}
		j.cu.fired(fire, outcomeOf(j.runAt(fire, false)))
		return
	}
	// The fire time bounds the attempt as for WithLock: one that comes later than
	// half its hold after the fire time (a pod slow to reach it in a herd) is
	// skipped, rather than hold the lock past the next fire time.
	ctx := ContextWithFireTime(j.e.base, fireTimeOf(j.schedule, now))
	cfg, late := j.config(now)
	if late {
		j.e.skipLate(ctx, cfg)
		return
	}
	_, _ = j.e.run(ctx, cfg, j.task, j.o) // run logs what fails
}

// config is the lock of a run that starts at now: held until the skew bound
// before the next fire time after now, and at least the job's LockAtMostFor.
// late: no hold the store keeps, counted from now, both ends by then and is
// one it can keep (a call within the skew bound of the next fire time, or,
// on a store of coarse holds, too close to it for the shortest): the run is
// skipped, as late for its fire time. It must not run with no hold, which
// lets a pod on time for the fire time run it again, nor with a hold sized
// from the fire time, which the store counts from now and keeps past the
// next one.
func (j *scheduledJob) config(now time.Time) (cfg LockConfig, late bool) {
	cfg = j.cfg
	if j.schedule == nil { // the entry was removed from c before Schedule read it
		return cfg, false
	}
	next := j.schedule.Next(now)
	if next.IsZero() {
		return cfg, false
	}
	hold := granularHold(j.e.provider, next.Sub(now)-j.o.skew)
	if hold <= 0 {
		return cfg, true
	}
	cfg.LockAtLeastFor = hold
	cfg.LockAtMostFor = max(cfg.LockAtMostFor, cfg.LockAtLeastFor)
	return cfg, false
}

// runAt is a CatchUp job's run for fire: its lock is taken with the job's
// LockAtMostFor and no LockAtLeastFor, only if fire has not succeeded (the
// store checks), and a success records fire and holds the lock until the skew
// bound before the next fire time. catchUp: the run is made by a check, not at
// fire itself.
func (j *scheduledJob) runAt(fire time.Time, catchUp bool) (bool, error) {
	f := &fireRun{at: fire, catchUp: catchUp}
	if next := j.schedule.Next(fire); !next.IsZero() {
		f.holdEnd = next.Add(-j.o.skew)
	}
	return j.e.runFire(ContextWithFireTime(j.e.base, fire), j.cfg, j.task, j.o, f, nil)
}
