-- Twin of migrations/0009_registry_head.sql: the FINGERPRINT_VERSION of the newest binary that
-- wrote this registry; an older binary refuses to write. 0: not recorded yet.
ALTER TABLE registry_head ADD COLUMN fingerprint_version BIGINT NOT NULL DEFAULT 0 CHECK (fingerprint_version >= 0);
