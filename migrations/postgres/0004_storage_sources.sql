-- Twin of migrations/0004_storage_sources.sql: each source document stored once, by digest.
CREATE TABLE sources (
    digest TEXT PRIMARY KEY,
    gz     BYTEA NOT NULL
);

ALTER TABLE tool_versions ADD COLUMN source_kind TEXT;
ALTER TABLE reviews ADD COLUMN source_kind TEXT;

CREATE INDEX tools_source_digest ON tools (source_digest) WHERE source_digest IS NOT NULL;
CREATE INDEX tool_versions_source_digest ON tool_versions (source_digest) WHERE source_digest IS NOT NULL;
CREATE INDEX reviews_source_digest ON reviews (source_digest) WHERE source_digest IS NOT NULL;
