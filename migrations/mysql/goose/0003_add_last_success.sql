-- +goose Up
ALTER TABLE shedlock ADD COLUMN last_success BIGINT NULL;

-- +goose Down
ALTER TABLE shedlock DROP COLUMN last_success;
