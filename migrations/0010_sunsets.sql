-- Issue 31: sunset and deprecation facts of accepted contracts, and the sunset alerts raised.
--
-- `sunsets`: one row per endpoint of an accepted contract (watch, tool version) that is
-- deprecated or states a sunset, computed when the contract is stored (and, for contracts
-- stored before this migration, on open): listings read it without decoding a document.
-- `sunset` is the UTC day (YYYY-MM-DD) when known; `sunset_state` is `known`, `unknown` (a
-- declared Sunset header without a date), `invalid` (a date that does not parse) or NULL (no
-- sunset). `name`, `operation_id` and `identity` are what a `uses` entry may name.
CREATE TABLE sunsets (
    watch        TEXT NOT NULL,
    version      INTEGER NOT NULL,
    endpoint     TEXT NOT NULL,
    operation_id TEXT,
    identity     TEXT NOT NULL,
    deprecated   INTEGER NOT NULL,
    sunset       TEXT,
    sunset_state TEXT,
    PRIMARY KEY (watch, version, endpoint)
) STRICT;

-- The contract versions whose facts are in `sunsets` (with or without rows): what the
-- backfill on open skips.
CREATE TABLE sunset_versions (
    watch   TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (watch, version)
) STRICT;

-- `sunset_approaching` alerts raised, once per (watch, endpoint, sunset date), across restarts.
CREATE TABLE sunset_alerts (
    watch     TEXT NOT NULL,
    endpoint  TEXT NOT NULL,
    sunset    TEXT NOT NULL,
    raised_at TEXT NOT NULL,
    PRIMARY KEY (watch, endpoint, sunset)
) STRICT;
