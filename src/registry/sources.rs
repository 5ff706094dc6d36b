//! Stored source documents: one copy per digest in `sources`, shared by every row that uses
//! it, released with its last use; a contract read back from its source.

use super::sql::{values, Db, Value};
use super::{codec, RegistryError, Result, ReviewState};
use crate::core::model::{Kind, ToolSpec};
use crate::core::normalize::SharedEndpoints;

/// The source document a contract was normalized from, as the registry keeps it: its digest
/// (with every accepted snapshot and review candidate) and the compressed document, stored
/// once in `sources` however many rows use it. When `derivable`, the rows store no contract:
/// it is read back by normalizing the source again (checked against the stored fingerprint).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredSource {
    pub digest: Option<String>,
    pub gz: Option<Vec<u8>>,
    /// The contract is this document as normalized by `core::normalize::normalize` (kind,
    /// watch name, bytes), and the document cannot spell a hidden character (so a projection
    /// upgrade never needs the earlier reading to compare newly modelled text against).
    pub derivable: bool,
}

impl StoredSource {
    /// The source of a contract normalized from exactly these bytes (by `normalize`, with the
    /// watch's kind and name: no external `$ref`s).
    pub fn of(bytes: &[u8]) -> StoredSource {
        StoredSource {
            digest: Some(codec::source_digest(bytes)),
            gz: Some(codec::gz_bytes(bytes)),
            derivable: !crate::core::hidden::can_spell_hidden(bytes),
        }
    }

    /// No source: the contract is not one document as read (an OpenAPI document with external
    /// `$ref`s), or it came from an older release.
    pub fn none() -> StoredSource {
        StoredSource::default()
    }

    /// Whether rows written with this source store no contract of their own.
    pub(super) fn derived(&self) -> bool {
        self.derivable && self.digest.is_some() && self.gz.is_some()
    }
}

/// The contract of a row that stores none: its source document (one copy in `sources`),
/// checked against its digest and normalized as when it was stored. Normalizing is
/// deterministic, so the reading is the stored contract; the callers check the fingerprint.
pub(super) fn source_spec(
    db: &mut Db<'_>,
    (table, key, name): (&'static str, &str, &str),
    kind: Kind,
    digest: Option<&str>,
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec> {
    let bad = |problem: String| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem,
    };
    let digest =
        digest.ok_or_else(|| bad("no source digest for a contract read from its source".into()))?;
    let gz: Vec<u8> = db
        .query_opt(
            "SELECT gz FROM sources WHERE digest = ?1",
            values![digest],
            |r| r.get(0),
        )?
        .ok_or_else(|| bad("its stored source document is missing".into()))?;
    let bytes = codec::gunzip(table, key, &gz)?;
    drop(gz);
    if codec::source_digest(&bytes) != digest {
        return Err(bad("the stored source does not match its digest".into()));
    }
    crate::core::normalize::normalize_sharing(kind, name, &bytes, shared).map_err(|e| {
        RegistryError::SourceUnreadable {
            table,
            key: key.to_string(),
            problem: format!("the stored source no longer normalizes ({e}); `schemawatch watch forget` registers the watch afresh"),
        }
    })
}

/// Stores a source document once (by digest) for rows about to use it.
pub(super) fn store_source(db: &mut Db<'_>, source: &StoredSource) -> Result<()> {
    if let (Some(digest), Some(gz)) = (&source.digest, &source.gz) {
        db.execute(
            "INSERT INTO sources (digest, gz) VALUES (?1, ?2) ON CONFLICT (digest) DO NOTHING",
            values![digest, gz],
        )?;
    }
    Ok(())
}

/// The source digests `sql` (with `params`) selects, to release after a write drops uses.
pub(super) fn digests(db: &mut Db<'_>, sql: &str, params: &[Value<'_>]) -> Result<Vec<String>> {
    Ok(db
        .query(sql, params, |r| r.get::<Option<String>>(0))?
        .into_iter()
        .flatten()
        .collect())
}

/// Deletes the stored sources among `digests` that no row uses any more: the current accepted
/// snapshot (a projection upgrade re-reads it), a row whose contract is read from it, an open
/// review (re-read like the accepted snapshot).
pub(super) fn release_sources(db: &mut Db<'_>, mut digests: Vec<String>) -> Result<()> {
    digests.sort();
    digests.dedup();
    for digest in digests {
        db.execute(
            "DELETE FROM sources WHERE digest = ?1
               AND NOT EXISTS (SELECT 1 FROM tools WHERE source_digest = ?1)
               AND NOT EXISTS (SELECT 1 FROM tool_versions
                               WHERE source_digest = ?1 AND source_kind IS NOT NULL)
               AND NOT EXISTS (SELECT 1 FROM reviews WHERE source_digest = ?1 AND pruned_at IS NULL
                               AND (source_kind IS NOT NULL OR state = ?2))",
            values![&digest, ReviewState::Open],
        )?;
    }
    Ok(())
}
