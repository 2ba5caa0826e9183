package shop

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// JobStats is what the journal says about one job.
type JobStats struct {
	Job       string
	RunsByPod map[string]int
	// OverlappingRuns counts runs that were running while another run of the
	// same job was: the thing the lock exists to prevent.
	OverlappingRuns int
}

// Summary is what the tables say about a scenario; every number comes from a
// query, none from the processes' memory.
type Summary struct {
	Jobs               []JobStats
	Pods               []string
	OrdersCreated      int
	OrdersCancelled    int
	CancelledTwice     int // orders with more than one committed order.cancelled event
	Publishes          int // rows in the topic
	PublishedTwice     int // events published more than once
	OptimisticFailures int
}

// unfinished stands for the end of a run that never wrote one: it counts as
// still running.
const unfinished = "'9999-12-31 23:59:59'"

// Report reads the Summary from the tables.
func (db *DB) Report(ctx context.Context) (Summary, error) {
	var s Summary
	byJob := map[string]*JobStats{}
	for _, job := range []string{CancelJobName, OutboxJobName} {
		byJob[job] = &JobStats{Job: job, RunsByPod: map[string]int{}}
	}
	rows, err := db.QueryContext(ctx, "SELECT job, pod, COUNT(*) FROM job_runs GROUP BY job, pod")
	if err != nil {
		return s, fmt.Errorf("shop: report: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var job, pod string
		var n int
		if err := rows.Scan(&job, &pod, &n); err != nil {
			return s, fmt.Errorf("shop: report: %w", err)
		}
		if byJob[job] == nil {
			byJob[job] = &JobStats{Job: job, RunsByPod: map[string]int{}}
		}
		byJob[job].RunsByPod[pod] = n
		if !slices.Contains(s.Pods, pod) {
			s.Pods = append(s.Pods, pod)
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("shop: report: %w", err)
	}
	slices.Sort(s.Pods)
	for _, st := range byJob {
		if err := db.QueryRowContext(ctx, "SELECT COUNT(DISTINCT a.id) FROM job_runs a JOIN job_runs b "+
			"ON a.job = b.job AND a.id <> b.id "+
			"AND a.started_at < COALESCE(b.finished_at, "+unfinished+") "+
			"AND b.started_at < COALESCE(a.finished_at, "+unfinished+") WHERE a.job = ?", st.Job).
			Scan(&st.OverlappingRuns); err != nil {
			return s, fmt.Errorf("shop: report overlaps: %w", err)
		}
		s.Jobs = append(s.Jobs, *st)
	}
	slices.SortFunc(s.Jobs, func(a, b JobStats) int {
		if a.Job < b.Job {
			return -1
		}
		return 1
	})
	counts := []struct {
		dst   *int
		query string
	}{
		{&s.OrdersCreated, "SELECT COUNT(*) FROM orders"},
		{&s.OrdersCancelled, "SELECT COUNT(*) FROM orders WHERE status = '" + Cancelled + "'"},
		{&s.CancelledTwice, "SELECT COUNT(*) FROM (SELECT aggregate_id FROM outbox_events " +
			"WHERE event_type = 'order.cancelled' GROUP BY aggregate_id HAVING COUNT(*) > 1) x"},
		{&s.Publishes, "SELECT COUNT(*) FROM topic"},
		{&s.PublishedTwice, "SELECT COUNT(*) FROM (SELECT event_id FROM topic GROUP BY event_id HAVING COUNT(*) > 1) x"},
		{&s.OptimisticFailures, "SELECT COUNT(*) FROM optimistic_failures"},
	}
	for _, c := range counts {
		if err := db.QueryRowContext(ctx, c.query).Scan(c.dst); err != nil {
			return s, fmt.Errorf("shop: report: %w", err)
		}
	}
	return s, nil
}

// Duplicates reports whether anything ran or happened twice.
func (s Summary) Duplicates() bool {
	for _, j := range s.Jobs {
		if j.OverlappingRuns > 0 {
			return true
		}
	}
	return s.PublishedTwice > 0 || s.CancelledTwice > 0
}

// Print writes s as two tables: runs per job and pod, then the outcomes.
func (s Summary) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprint(tw, "job\t")
	for _, p := range s.Pods {
		fmt.Fprintf(tw, "runs %s\t", p)
	}
	fmt.Fprint(tw, "overlapping runs\n")
	for _, j := range s.Jobs {
		fmt.Fprintf(tw, "%s\t", j.Job)
		for _, p := range s.Pods {
			fmt.Fprintf(tw, "%d\t", j.RunsByPod[p])
		}
		fmt.Fprintf(tw, "%d\n", j.OverlappingRuns)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, r := range []struct {
		label string
		n     int
	}{
		{"orders created", s.OrdersCreated},
		{"orders cancelled", s.OrdersCancelled},
		{"orders cancelled twice", s.CancelledTwice},
		{"optimistic-lock failures", s.OptimisticFailures},
		{"events published (topic rows)", s.Publishes},
		{"events published more than once", s.PublishedTwice},
	} {
		fmt.Fprintf(tw, "%s\t%d\n", r.label, r.n)
	}
	return tw.Flush()
}
