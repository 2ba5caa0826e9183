-- +goose Up
ALTER TABLE shedlock ADD COLUMN paused_at BIGINT NULL,
  ADD COLUMN paused_until BIGINT NULL,
  ADD COLUMN runs_requested BIGINT NULL,
  ADD COLUMN runs_done BIGINT NULL,
  ADD COLUMN runs_done_by VARCHAR(255) NULL;

-- +goose Down
ALTER TABLE shedlock DROP COLUMN paused_at, DROP COLUMN paused_until, DROP COLUMN runs_requested, DROP COLUMN runs_done, DROP COLUMN runs_done_by;
