-- Twin of migrations/0008_ui_sessions.sql: how a decision was made, and the review UI's sessions.
ALTER TABLE tool_versions ADD COLUMN via TEXT;
ALTER TABLE reviews ADD COLUMN via TEXT;

CREATE TABLE ui_sessions (
    token_sha256 TEXT PRIMARY KEY,
    reviewer     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   BIGINT NOT NULL
);
