-- Twin of migrations/0003_compact_storage.sql: compressed rows, review pruning, stored sources.
-- (SQLite's migration also marks the rows of earlier releases `legacy_projection = 1` and drops
-- their validators; a PostgreSQL registry has no rows from before this migration, so there is
-- nothing to mark. `registry copy` carries the column's value.)
ALTER TABLE tools ADD COLUMN spec_gz BYTEA;
ALTER TABLE tool_versions ADD COLUMN spec_gz BYTEA;
ALTER TABLE reviews ADD COLUMN candidate_gz BYTEA;
ALTER TABLE reviews ADD COLUMN report_gz BYTEA;

ALTER TABLE reviews ADD COLUMN pruned_at TEXT;

ALTER TABLE tools ADD COLUMN source_digest TEXT;
ALTER TABLE tools ADD COLUMN source_gz BYTEA;
ALTER TABLE tool_versions ADD COLUMN source_digest TEXT;
ALTER TABLE reviews ADD COLUMN source_digest TEXT;
ALTER TABLE reviews ADD COLUMN source_gz BYTEA;
ALTER TABLE rejected_candidates ADD COLUMN source_digest TEXT;
ALTER TABLE rejected_candidates ADD COLUMN fingerprint_version BIGINT;
ALTER TABLE tool_versions ADD COLUMN note TEXT;

-- 0/1 as in SQLite (BIGINT, not BOOLEAN): the code compares it with `<> 0` and binds integers,
-- so one SQL text serves both backends.
ALTER TABLE tools ADD COLUMN legacy_projection BIGINT NOT NULL DEFAULT 0;
