ALTER TABLE shedlock DROP COLUMN last_success;
