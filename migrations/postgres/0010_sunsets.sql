-- Issue 31: the PostgreSQL twin of migrations/0010_sunsets.sql (same tables and columns,
-- PostgreSQL types; see that file for what each holds).
CREATE TABLE sunsets (
    watch        TEXT NOT NULL,
    version      BIGINT NOT NULL,
    endpoint     TEXT NOT NULL,
    operation_id TEXT,
    identity     TEXT NOT NULL,
    deprecated   BIGINT NOT NULL,
    sunset       TEXT,
    sunset_state TEXT,
    PRIMARY KEY (watch, version, endpoint)
);

CREATE TABLE sunset_versions (
    watch   TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (watch, version)
);

CREATE TABLE sunset_alerts (
    watch     TEXT NOT NULL,
    endpoint  TEXT NOT NULL,
    sunset    TEXT NOT NULL,
    raised_at TEXT NOT NULL,
    PRIMARY KEY (watch, endpoint, sunset)
);
