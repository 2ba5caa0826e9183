ALTER TABLE shedlock DROP COLUMN fence;
