package shedlock

import "time"

// JobInfo is one job an executor has registered, as this process sees it.
type JobInfo struct {
	// Name is the job's lock name.
	Name string
	// Next is the job's next fire time here: for a Schedule job its cron
	// schedule's, for a FixedDelay job when its next attempt is due; zero for
	// a job run by hand (Run, Wrap) or not yet started.
	Next time.Time
	// Running reports whether this process runs the job now.
	Running bool
}
