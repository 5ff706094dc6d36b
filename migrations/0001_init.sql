-- schemawatch registry, schema version 1.
-- One row in `registry_head` holds the monotonic registry_version, bumped exactly once per
-- committed mutation of contract state (a tool registered, applied, accepted or forgotten).

CREATE TABLE registry_head (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    registry_version INTEGER NOT NULL CHECK (registry_version >= 0)
) STRICT;
INSERT INTO registry_head (id, registry_version) VALUES (1, 0);

-- The accepted contract of each watched tool.
CREATE TABLE tools (
    name                TEXT PRIMARY KEY,
    kind                TEXT NOT NULL,
    position            INTEGER NOT NULL,
    version             INTEGER NOT NULL CHECK (version >= 1),
    registry_version    INTEGER NOT NULL,
    fingerprint         TEXT NOT NULL,
    fingerprint_version INTEGER NOT NULL,
    spec_json           TEXT NOT NULL,
    applied_at          TEXT NOT NULL
) STRICT;

-- Every applied version of every tool.
CREATE TABLE tool_versions (
    tool                TEXT NOT NULL,
    version             INTEGER NOT NULL,
    registry_version    INTEGER NOT NULL UNIQUE,
    fingerprint         TEXT NOT NULL,
    fingerprint_version INTEGER NOT NULL,
    spec_json           TEXT NOT NULL,
    applied_at          TEXT NOT NULL,
    compatibility       TEXT,
    review_id           INTEGER,
    reviewer            TEXT,
    reason              TEXT,
    PRIMARY KEY (tool, version)
) STRICT;

-- Per-watch bookkeeping (not contract state: updating it does not bump registry_version).
CREATE TABLE watch_state (
    watch                TEXT PRIMARY KEY,
    kind                 TEXT NOT NULL,
    status               TEXT NOT NULL,
    last_compatibility   TEXT,
    last_checked_at      TEXT,
    last_error           TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    source_identity      TEXT
) STRICT;

-- HTTP validators of the accepted snapshot, keyed by watch and a digest of the source identity.
CREATE TABLE validators (
    watch         TEXT NOT NULL,
    source_digest TEXT NOT NULL,
    etag          TEXT,
    last_modified TEXT,
    PRIMARY KEY (watch, source_digest)
) STRICT;

CREATE TABLE reviews (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    watch                 TEXT NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('open', 'accepted', 'rejected', 'superseded')),
    compatibility         TEXT NOT NULL,
    change_count          INTEGER NOT NULL,
    created_at            TEXT NOT NULL,
    base_registry_version INTEGER NOT NULL,
    base_fingerprint      TEXT,
    candidate_fingerprint TEXT NOT NULL,
    fingerprint_version   INTEGER NOT NULL,
    candidate_spec_json   TEXT NOT NULL,
    report_json           TEXT NOT NULL,
    decided_at            TEXT,
    reviewer              TEXT,
    reason                TEXT
) STRICT;
CREATE UNIQUE INDEX one_open_review_per_watch ON reviews (watch) WHERE state = 'open';

-- Candidates a reviewer rejected: the same fingerprint is answered `rejected`, never re-queued.
CREATE TABLE rejected_candidates (
    watch       TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    review_id   INTEGER NOT NULL,
    rejected_at TEXT NOT NULL,
    PRIMARY KEY (watch, fingerprint)
) STRICT;
