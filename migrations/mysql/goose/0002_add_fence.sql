-- +goose Up
ALTER TABLE shedlock ADD COLUMN fence BIGINT NULL;

-- +goose Down
ALTER TABLE shedlock DROP COLUMN fence;
