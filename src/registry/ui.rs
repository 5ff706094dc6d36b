//! What the review UI reads and writes beyond the review queue: sessions (the SHA-256 of the
//! cookie value, never the value; written at login and logout only and outside
//! `registry_version`), one stored version of a contract at a time, and a review's candidate
//! document (for source lines).

use super::sql::values;
use super::{codec, Registry, Result, UiSession};
use crate::core::model::ToolSpec;

impl Registry {
    /// Stores a session under the digest of its cookie value, and drops expired ones. No
    /// registry version bump, no event: a session is no contract state.
    pub fn create_session(
        &mut self,
        token_sha256: &str,
        reviewer: &str,
        now_unix: i64,
        expires_at: i64,
    ) -> Result<()> {
        let created_at = super::now_rfc3339();
        self.write(|db| {
            db.execute(
                "DELETE FROM ui_sessions WHERE expires_at <= ?1",
                values![now_unix],
            )?;
            db.execute(
                UPSERT_SESSION,
                values![token_sha256, reviewer, &created_at, expires_at],
            )?;
            Ok(())
        })
    }

    /// The unexpired session whose cookie value has this digest (a read: nothing is written).
    pub fn session(&self, token_sha256: &str, now_unix: i64) -> Result<Option<UiSession>> {
        self.read(|db| {
            db.query_opt(
                "SELECT reviewer, expires_at FROM ui_sessions
                 WHERE token_sha256 = ?1 AND expires_at > ?2",
                values![token_sha256, now_unix],
                |r| {
                    Ok(UiSession {
                        reviewer: r.get(0)?,
                        expires_at: r.get(1)?,
                    })
                },
            )
        })
    }

    /// Logout: drops the session (whether or not it existed).
    pub fn delete_session(&mut self, token_sha256: &str) -> Result<()> {
        self.write(|db| {
            db.execute(
                "DELETE FROM ui_sessions WHERE token_sha256 = ?1",
                values![token_sha256],
            )?;
            Ok(())
        })
    }

    /// One retained version of a tool's contract, read alone (a page comparing two versions
    /// holds at most two contracts, never the whole history). `None`: no such version.
    pub fn version_spec(&self, tool: &str, version: i64) -> Result<Option<ToolSpec>> {
        self.read(|db| {
            let row = db.query_opt(
                "SELECT spec_json, spec_gz, source_kind, source_digest, fingerprint, fingerprint_version
                 FROM tool_versions WHERE tool = ?1 AND version = ?2",
                values![tool, version],
                |r| {
                    Ok(super::StoredVersion {
                        json: r.get(0)?,
                        gz: r.get(1)?,
                        kind: r.get(2)?,
                        digest: r.get(3)?,
                        fingerprint: r.get(4)?,
                        fp_version: r.get(5)?,
                    })
                },
            )?;
            match row {
                Some(row) => super::stored_version(db, tool, version, row).map(Some),
                None => Ok(None),
            }
        })
    }

    /// The candidate document of a review as it was read (for source lines), when stored.
    pub fn review_document(&self, id: i64) -> Result<Option<Vec<u8>>> {
        let source = self.read(|db| super::review_source(db, id))?;
        match source.gz {
            Some(gz) => Ok(Some(codec::gunzip("reviews", &id.to_string(), &gz)?)),
            None => Ok(None),
        }
    }

    /// How each decided review was decided (`via`), by review id, for the reviews of a watch.
    pub fn review_via(&self, id: i64) -> Result<Option<super::Via>> {
        let via = self.read(|db| {
            db.query_opt("SELECT via FROM reviews WHERE id = ?1", values![id], |r| {
                r.get(0)
            })
        })?;
        Ok(via.flatten())
    }
}

/// A session row written whole (every column of `ui_sessions` in the SET list, as the
/// `INSERT OR REPLACE` it replaces; `upserts_write_every_column` checks it).
pub(super) const UPSERT_SESSION: &str =
    "INSERT INTO ui_sessions (token_sha256, reviewer, created_at, expires_at)
     VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (token_sha256) DO UPDATE SET reviewer = excluded.reviewer,
        created_at = excluded.created_at, expires_at = excluded.expires_at";
