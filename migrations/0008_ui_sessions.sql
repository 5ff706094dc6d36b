-- Issue 32: how a decision was made, and the review UI's sessions.
--
-- `via` on history rows and reviews: `cli` (a local shell's free-text --reviewer), `admin` (the
-- admin token naming a reviewer), `reviewer` (a [[reviewer]]'s own token, UI session or
-- single-sign-on header). NULL on rows written before this migration.
ALTER TABLE tool_versions ADD COLUMN via TEXT;
ALTER TABLE reviews ADD COLUMN via TEXT;

-- UI sessions: the SHA-256 of the cookie value (never the value), the reviewer it names and an
-- absolute expiry (unix seconds). Written at login and logout only, never per page view, and
-- outside registry_version (no contract state).
CREATE TABLE ui_sessions (
    token_sha256 TEXT PRIMARY KEY,
    reviewer     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
