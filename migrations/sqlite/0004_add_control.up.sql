ALTER TABLE shedlock ADD COLUMN paused_at BIGINT;
ALTER TABLE shedlock ADD COLUMN paused_until BIGINT;
ALTER TABLE shedlock ADD COLUMN runs_requested BIGINT;
ALTER TABLE shedlock ADD COLUMN runs_done BIGINT;
ALTER TABLE shedlock ADD COLUMN runs_done_by VARCHAR(255);
