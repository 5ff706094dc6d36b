-- Twin of migrations/0011_change_counter.sql: bumped by every write transaction (under the
-- head row's lock); compared by connections that never write, to see another's commits.
ALTER TABLE registry_head ADD COLUMN changes BIGINT NOT NULL DEFAULT 0;
