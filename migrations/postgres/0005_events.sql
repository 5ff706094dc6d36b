-- Twin of migrations/0005_events.sql: the event log and durable deliveries (issue 26).
--
-- The registry id: 32 lower-case hex digits from the server's random UUID generator
-- (gen_random_uuid, built in since PostgreSQL 13), as SQLite's lower(hex(randomblob(16))).
CREATE TABLE registry_meta (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    registry_id TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    event_seq   BIGINT NOT NULL DEFAULT 0
);
INSERT INTO registry_meta (id, registry_id, created_at, event_seq)
VALUES (1, replace(gen_random_uuid()::text, '-', ''),
        to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 0);

CREATE TABLE events (
    seq        BIGINT PRIMARY KEY,
    event      TEXT NOT NULL,
    watch      TEXT,
    created_at TEXT NOT NULL,
    data_json  TEXT NOT NULL
);
CREATE INDEX events_watch ON events (watch, seq);

CREATE TABLE deliveries (
    event_seq        BIGINT NOT NULL,
    sink             TEXT NOT NULL,
    state            TEXT NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    created_ms       BIGINT NOT NULL,
    next_attempt_ms  BIGINT NOT NULL,
    updated_at       TEXT,
    last_status      BIGINT,
    last_error       TEXT,
    lease_owner      TEXT,
    lease_until_ms   BIGINT,
    PRIMARY KEY (event_seq, sink)
);
CREATE INDEX deliveries_due ON deliveries (state, next_attempt_ms);
CREATE INDEX deliveries_sink ON deliveries (sink, state);

CREATE TABLE notify_sinks (
    name            TEXT PRIMARY KEY,
    config_digest   TEXT NOT NULL,
    disabled_at     TEXT,
    disabled_reason TEXT
);

CREATE TABLE delivery_lease (
    id       BIGINT PRIMARY KEY CHECK (id = 1),
    owner    TEXT NOT NULL,
    until_ms BIGINT NOT NULL
);
