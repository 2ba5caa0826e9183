-- +goose Up
CREATE TABLE IF NOT EXISTS shedlock (
  name       VARCHAR(64)  NOT NULL,
  lock_until TEXT         NOT NULL,
  locked_at  TEXT         NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  locked_by  VARCHAR(255) NOT NULL,
  PRIMARY KEY (name)
);

-- +goose Down
DROP TABLE IF EXISTS shedlock;
