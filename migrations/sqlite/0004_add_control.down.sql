ALTER TABLE shedlock DROP COLUMN paused_at;
ALTER TABLE shedlock DROP COLUMN paused_until;
ALTER TABLE shedlock DROP COLUMN runs_requested;
ALTER TABLE shedlock DROP COLUMN runs_done;
ALTER TABLE shedlock DROP COLUMN runs_done_by;
