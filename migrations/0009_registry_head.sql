-- The head row records the FINGERPRINT_VERSION of the newest binary that wrote this registry
-- (issue 33, item 3): a binary with an older one refuses to write (its projection would
-- fingerprint documents differently, and re-queue or apply what a newer one already
-- upgraded), while reads still work. 0: not recorded yet (a registry created or last
-- written before this migration); recorded once a binary's projection upgrade has run.
ALTER TABLE registry_head ADD COLUMN fingerprint_version INTEGER NOT NULL DEFAULT 0 CHECK (fingerprint_version >= 0);
