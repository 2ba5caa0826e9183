ALTER TABLE shedlock ADD COLUMN paused_at BIGINT,
  ADD COLUMN paused_until BIGINT,
  ADD COLUMN runs_requested BIGINT,
  ADD COLUMN runs_done BIGINT,
  ADD COLUMN runs_done_by VARCHAR(255);
