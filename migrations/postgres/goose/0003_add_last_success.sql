-- +goose Up
ALTER TABLE shedlock ADD COLUMN last_success BIGINT;

-- +goose Down
ALTER TABLE shedlock DROP COLUMN last_success;
