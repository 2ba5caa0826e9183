-- +goose Up
ALTER TABLE shedlock ADD COLUMN paused_at BIGINT,
  ADD COLUMN paused_until BIGINT,
  ADD COLUMN runs_requested BIGINT,
  ADD COLUMN runs_done BIGINT,
  ADD COLUMN runs_done_by VARCHAR(255);

-- +goose Down
ALTER TABLE shedlock DROP COLUMN paused_at, DROP COLUMN paused_until, DROP COLUMN runs_requested, DROP COLUMN runs_done, DROP COLUMN runs_done_by;
