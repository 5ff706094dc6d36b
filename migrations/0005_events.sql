-- schemawatch registry: the event log and durable deliveries (issue 26).
--
-- `registry_meta` holds the registry's id, generated once here (events are globally unique:
-- an event id is `<registry id>-<sequence>`), its creation time, and the event sequence's
-- high-water mark (gap-free: bumped in the transaction that writes the event).
CREATE TABLE registry_meta (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    registry_id TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    event_seq   INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO registry_meta (id, registry_id, created_at, event_seq)
VALUES (1, lower(hex(randomblob(16))), strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), 0);

-- One row per event, written in the same transaction as the change it reports. `data_json`
-- is the content-free payload (core::event::EventData).
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    event      TEXT NOT NULL,
    watch      TEXT,
    created_at TEXT NOT NULL,
    data_json  TEXT NOT NULL
) STRICT;
CREATE INDEX events_watch ON events (watch, seq);

-- One row per event × sink that matched when the event was written. `state`: pending,
-- delivered, failed. A claim is a lease (`lease_owner`, `lease_until_ms`): a row is sent by
-- one process per attempt. Times in milliseconds since the Unix epoch.
CREATE TABLE deliveries (
    event_seq        INTEGER NOT NULL,
    sink             TEXT NOT NULL,
    state            TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    created_ms       INTEGER NOT NULL,
    next_attempt_ms  INTEGER NOT NULL,
    updated_at       TEXT,
    last_status      INTEGER,
    last_error       TEXT,
    lease_owner      TEXT,
    lease_until_ms   INTEGER,
    PRIMARY KEY (event_seq, sink)
) STRICT;
CREATE INDEX deliveries_due ON deliveries (state, next_attempt_ms);
CREATE INDEX deliveries_sink ON deliveries (sink, state);

-- A sink's persisted state: disabled by a 410 Gone until its configuration (by digest) changes.
CREATE TABLE notify_sinks (
    name            TEXT PRIMARY KEY,
    config_digest   TEXT NOT NULL,
    disabled_at     TEXT,
    disabled_reason TEXT
) STRICT;

-- Which process delivers: the daemon holds this lease and renews it; a one-shot `check`
-- delivers only when no live holder has it.
CREATE TABLE delivery_lease (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    owner    TEXT NOT NULL,
    until_ms INTEGER NOT NULL
) STRICT;
