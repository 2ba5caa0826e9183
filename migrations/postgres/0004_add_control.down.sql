ALTER TABLE shedlock DROP COLUMN paused_at, DROP COLUMN paused_until, DROP COLUMN runs_requested, DROP COLUMN runs_done, DROP COLUMN runs_done_by;
