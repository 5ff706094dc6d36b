-- The key of the registry's keyed digests (docs/reliability.md H39): a watch URL's query
-- values are stored in its source identity only as HMAC-SHA256 under this key, never as
-- written (a `?token=` is a credential as often as not). One row, 32 random bytes, created by
-- the first refresh that needs it.
CREATE TABLE identity_key (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL CHECK (length(key) = 32)
) STRICT;
