package shop

import (
	"context"
	"fmt"
)

// journal records one run of job in job_runs, with start and end from the
// database clock, so that overlapping runs can be found with one query. The end
// is written even when ctx has ended: a run stopped by shutdown still ran.
func (j *Jobs) journal(ctx context.Context, job string, run func(ctx context.Context) error) (err error) {
	id, err := insert(ctx, j.DB.D, j.DB,
		"INSERT INTO job_runs (job, pod, started_at) VALUES (?, ?, "+j.DB.D.Now+")", job, j.Pod)
	if err != nil {
		return fmt.Errorf("shop: %s: journal start: %w", job, err)
	}
	defer func() {
		_, endErr := j.DB.ExecContext(context.WithoutCancel(ctx),
			"UPDATE job_runs SET finished_at = "+j.DB.D.Now+" WHERE id = ?", id)
		if endErr != nil && err == nil {
			err = fmt.Errorf("shop: %s: journal end: %w", job, endErr)
		}
	}()
	return run(ctx)
}
