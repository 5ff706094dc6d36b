-- The registry's change counter (issue 33, item 3): every PostgreSQL write transaction bumps
-- it, and a connection that never writes compares it to learn that another committed (the
-- daemon's recount, the gateway's contract reader). SQLite answers the same question with
-- `PRAGMA data_version` and leaves this column at 0; it exists so both schemas stay twins.
ALTER TABLE registry_head ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;
