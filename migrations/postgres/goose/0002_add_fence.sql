-- +goose Up
ALTER TABLE shedlock ADD COLUMN fence BIGINT;

-- +goose Down
ALTER TABLE shedlock DROP COLUMN fence;
