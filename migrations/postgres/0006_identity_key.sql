-- Twin of migrations/0006_identity_key.sql: the key of the registry's keyed digests.
CREATE TABLE identity_key (
    id  BIGINT PRIMARY KEY CHECK (id = 1),
    key BYTEA NOT NULL CHECK (octet_length(key) = 32)
);
