-- schemawatch registry, schema version 3: compressed rows, review pruning, stored sources.
--
-- Compression (format marker): a row whose `*_gz` column is set stores its JSON there, gzip
-- compressed, and '' in the old TEXT column; rows written by older releases keep their TEXT and
-- read as before, so nothing is rewritten here.
ALTER TABLE tools ADD COLUMN spec_gz BLOB;
ALTER TABLE tool_versions ADD COLUMN spec_gz BLOB;
ALTER TABLE reviews ADD COLUMN candidate_gz BLOB;
ALTER TABLE reviews ADD COLUMN report_gz BLOB;

-- `[storage] keep_reviews`: an old closed review keeps its metadata and drops its candidate and
-- report (both '' and NULL); `pruned_at` says when.
ALTER TABLE reviews ADD COLUMN pruned_at TEXT;

-- The safe upgrade path across a projection change (FINGERPRINT_VERSION): a digest of the
-- source document of each accepted snapshot and review candidate, and the compressed source
-- itself for the current accepted snapshot and open candidates, re-normalized on a bump.
ALTER TABLE tools ADD COLUMN source_digest TEXT;
ALTER TABLE tools ADD COLUMN source_gz BLOB;
ALTER TABLE tool_versions ADD COLUMN source_digest TEXT;
ALTER TABLE reviews ADD COLUMN source_digest TEXT;
ALTER TABLE reviews ADD COLUMN source_gz BLOB;
ALTER TABLE rejected_candidates ADD COLUMN source_digest TEXT;
ALTER TABLE rejected_candidates ADD COLUMN fingerprint_version INTEGER;
-- A note on a history row changed in place (`projection-upgrade`): not a new version.
ALTER TABLE tool_versions ADD COLUMN note TEXT;

-- Accepted snapshots written by an earlier release were read by a narrower projection and
-- carry no source to read again: the first full fetch may baseline, once, what only the wider
-- projection reads (refresh.rs, `rebaseline_legacy`). Rows written from now on are 0.
ALTER TABLE tools ADD COLUMN legacy_projection INTEGER NOT NULL DEFAULT 0;
UPDATE tools SET legacy_projection = 1;
-- ... and a watch whose server answers only 304 fetches those documents once in full.
DELETE FROM validators WHERE watch IN (SELECT name FROM tools WHERE legacy_projection = 1);
