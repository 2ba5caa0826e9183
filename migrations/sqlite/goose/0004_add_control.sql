-- +goose Up
ALTER TABLE shedlock ADD COLUMN paused_at BIGINT;
ALTER TABLE shedlock ADD COLUMN paused_until BIGINT;
ALTER TABLE shedlock ADD COLUMN runs_requested BIGINT;
ALTER TABLE shedlock ADD COLUMN runs_done BIGINT;
ALTER TABLE shedlock ADD COLUMN runs_done_by VARCHAR(255);

-- +goose Down
ALTER TABLE shedlock DROP COLUMN paused_at;
ALTER TABLE shedlock DROP COLUMN paused_until;
ALTER TABLE shedlock DROP COLUMN runs_requested;
ALTER TABLE shedlock DROP COLUMN runs_done;
ALTER TABLE shedlock DROP COLUMN runs_done_by;
