//! The registry's identity key: the key of the keyed digests that stand for a watch URL's
//! query values in its stored source identity (docs/reliability.md H39).

use super::sql::values;
use super::{Registry, RegistryError, Result};

impl Registry {
    /// The registry's 32-byte identity key, created (from the operating system's random
    /// source) on first use, in its own write transaction.
    pub fn identity_key(&mut self) -> Result<[u8; 32]> {
        if let Some(key) = self.stored_identity_key()? {
            return Ok(key);
        }
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh).map_err(|e| RegistryError::BadRow {
            table: "identity_key",
            key: "1".into(),
            problem: format!("no random source for the identity key: {e}"),
        })?;
        // Another process may have created it while we waited for the write lock: keep theirs.
        self.write(|db| {
            db.execute(
                "INSERT INTO identity_key (id, key) VALUES (1, ?1) ON CONFLICT (id) DO NOTHING",
                values![fresh.as_slice()],
            )
        })?;
        self.stored_identity_key()?
            .ok_or_else(|| RegistryError::BadRow {
                table: "identity_key",
                key: "1".into(),
                problem: "the identity key was not stored".into(),
            })
    }

    fn stored_identity_key(&self) -> Result<Option<[u8; 32]>> {
        let key: Option<Vec<u8>> = self.read(|db| {
            db.query_opt("SELECT key FROM identity_key WHERE id = 1", &[], |r| {
                r.get(0)
            })
        })?;
        match key {
            None => Ok(None),
            Some(bytes) => <[u8; 32]>::try_from(bytes.as_slice())
                .map(Some)
                .map_err(|_| RegistryError::BadRow {
                    table: "identity_key",
                    key: "1".into(),
                    problem: "the identity key is not 32 bytes".into(),
                }),
        }
    }
}
