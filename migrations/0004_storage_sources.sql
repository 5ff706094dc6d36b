-- schemawatch registry: each source document stored once, and a contract read from its
-- source instead of stored beside it (issue 20, item 4: a stored version costs at most the
-- document's gzip size).
--
-- `sources` holds every stored source document once, gzip compressed, by its digest (the
-- `source_digest` of the rows that use it): the current accepted snapshot, every history row
-- and every review that reads its contract from it share one copy. A blob no row needs any
-- more is deleted in the transaction that dropped the last use.
CREATE TABLE sources (
    digest TEXT PRIMARY KEY,
    gz     BLOB NOT NULL
) STRICT;

-- Format marker: a history row or review whose `source_kind` is set stores no contract
-- ('' in the TEXT column, NULL in the gz column); its contract is its source document (in
-- `sources`, by `source_digest`) normalized as that kind under the row's key, checked against
-- the stored fingerprint. Rows without it (older releases, external `$ref`s, a document that
-- could spell a hidden character) keep their stored contract and read as before.
ALTER TABLE tool_versions ADD COLUMN source_kind TEXT;
ALTER TABLE reviews ADD COLUMN source_kind TEXT;

-- Whether a blob is still used: one lookup per table.
CREATE INDEX tools_source_digest ON tools (source_digest) WHERE source_digest IS NOT NULL;
CREATE INDEX tool_versions_source_digest ON tool_versions (source_digest) WHERE source_digest IS NOT NULL;
CREATE INDEX reviews_source_digest ON reviews (source_digest) WHERE source_digest IS NOT NULL;
