ALTER TABLE shedlock ADD COLUMN last_success BIGINT NULL;
