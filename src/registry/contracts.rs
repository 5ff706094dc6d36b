//! Accepted contracts and their history: reads (checked against their fingerprints, read
//! from the stored source where the row keeps no contract) and the compare-and-swap apply
//! that bumps `registry_version` once per committed contract mutation.

use super::sql::{values, Db};
use super::watch::SourceValidators;
use super::{
    codec, digests, events, failpoint, now_rfc3339, release_sources, source_spec, store_source,
    store_validators, supersede_open_reviews, CasBase, HistoryEntry, Provenance, Registry,
    RegistryError, Result, StoredSource, StoredTool, WatchState,
};
use crate::core::event::{EventData, EventKind};
use crate::core::fingerprint::{tool_fingerprint, FINGERPRINT_VERSION};
use crate::core::model::{Compatibility, DriftReport, Kind, ToolSpec};
use crate::core::normalize::SharedEndpoints;

impl Registry {
    /// Every retained snapshot of a tool, oldest first: (contract version, compatibility it was
    /// applied with, contract).
    pub fn snapshots(&self, tool: &str) -> Result<Vec<(i64, Option<Compatibility>, ToolSpec)>> {
        self.read(|db| {
            let rows = db.query(
                "SELECT version, compatibility, spec_json, spec_gz, source_kind, source_digest,
                        fingerprint, fingerprint_version
                 FROM tool_versions WHERE tool = ?1 ORDER BY version",
                values![tool],
                |r| {
                    Ok((
                        r.get::<i64>(0)?,
                        r.get::<Option<Compatibility>>(1)?,
                        StoredVersion {
                            json: r.get(2)?,
                            gz: r.get(3)?,
                            kind: r.get(4)?,
                            digest: r.get(5)?,
                            fingerprint: r.get(6)?,
                            fp_version: r.get(7)?,
                        },
                    ))
                },
            )?;
            rows.into_iter()
                .map(|(version, compatibility, row)| {
                    let spec = stored_version(db, tool, version, row)?;
                    Ok((version, compatibility, spec))
                })
                .collect()
        })
    }
    pub fn registry_version(&self) -> Result<i64> {
        self.read(head_version)
    }
    pub fn tool(&self, name: &str) -> Result<Option<StoredTool>> {
        self.read(|db| read_tool(db, name))
    }
    /// [`Registry::tool`], given the contract just normalized from a fetched document: when
    /// the accepted snapshot is stored as that very document, its contract is `fetched.spec`
    /// (no second normalization of the stored copy).
    pub fn tool_given(&self, name: &str, fetched: Fetched<'_>) -> Result<Option<StoredTool>> {
        self.read(|db| read_tool_given(db, name, Some(fetched)))
    }
    /// Every accepted tool, in registration order.
    pub fn tools(&self) -> Result<Vec<StoredTool>> {
        self.read(|db| {
            let names: Vec<String> =
                db.query("SELECT name FROM tools ORDER BY position, name", &[], |r| {
                    r.get(0)
                })?;
            names
                .iter()
                .filter_map(|n| read_tool(db, n).transpose())
                .collect()
        })
    }
    /// Compare-and-swap apply: stores `spec` as the tool's next version if the tool is still at
    /// `expected` (or absent, for `None`). Returns the new registry version.
    pub fn apply(
        &mut self,
        spec: &ToolSpec,
        expected: Option<&CasBase>,
        provenance: &Provenance,
        keep_versions: u32,
    ) -> Result<i64> {
        self.write(|db| {
            apply_in(
                db,
                spec,
                expected,
                provenance,
                keep_versions,
                &StoredSource::none(),
            )
        })
    }
    pub fn history(&self, tool: &str) -> Result<Vec<HistoryEntry>> {
        let rows = self.read(|db| {
            db.query(
                "SELECT version, registry_version, fingerprint, applied_at, compatibility, review_id,
                        reviewer, reason, accepted_changes, note, via
                 FROM tool_versions WHERE tool = ?1 ORDER BY version DESC",
                values![tool],
                |r| {
                    Ok((
                        HistoryEntry {
                            version: r.get(0)?,
                            registry_version: r.get(1)?,
                            fingerprint: r.get(2)?,
                            applied_at: r.get(3)?,
                            compatibility: r.get(4)?,
                            review_id: r.get(5)?,
                            reviewer: r.get(6)?,
                            reason: r.get(7)?,
                            accepted_changes: Vec::new(),
                            note: r.get(9)?,
                            via: r.get(10)?,
                        },
                        r.get::<Option<String>>(8)?,
                    ))
                },
            )
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for (mut entry, accepted) in rows {
            if let Some(text) = accepted {
                entry.accepted_changes =
                    serde_json::from_str(&text).map_err(|e| RegistryError::BadRow {
                        table: "tool_versions",
                        key: format!("{tool}/{}", entry.version),
                        problem: format!("accepted_changes: {e}"),
                    })?;
            }
            out.push(entry);
        }
        Ok(out)
    }
    /// Applies (or registers) a candidate and records the watch state and validators in the
    /// same transaction.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_with_state(
        &mut self,
        spec: &ToolSpec,
        expected: Option<&CasBase>,
        provenance: &Provenance,
        keep_versions: u32,
        state: &WatchState,
        validators: Option<SourceValidators<'_>>,
        source: &StoredSource,
    ) -> Result<i64> {
        self.apply_candidate(
            spec,
            expected,
            provenance,
            keep_versions,
            state,
            validators,
            source,
            None,
        )
    }
    /// [`Registry::apply_with_state`] with the report of the comparison, which its event
    /// (`registered`, `applied` or `projection_upgrade`) carries.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_candidate(
        &mut self,
        spec: &ToolSpec,
        expected: Option<&CasBase>,
        provenance: &Provenance,
        keep_versions: u32,
        state: &WatchState,
        validators: Option<SourceValidators<'_>>,
        source: &StoredSource,
        report: Option<&DriftReport>,
    ) -> Result<i64> {
        failpoint::hit("apply.begin")?;
        let routes = self.current_routes();
        let version = self.write(|db| {
            let version = apply_in(db, spec, expected, provenance, keep_versions, source)?;
            failpoint::hit("apply.after_snapshot")?;
            supersede_open_reviews(db, &routes, &state.watch, state.kind, None)?;
            events::upsert_watch_emitting(db, &routes, state, None, None)?;
            let kind = if provenance.reason.as_deref() == Some("projection-upgrade") {
                EventKind::ProjectionUpgrade
            } else if expected.is_none() {
                EventKind::Registered
            } else {
                EventKind::Applied
            };
            let mut data = EventData::for_watch(&state.watch, state.kind.as_str());
            if let Some(report) = report {
                data = data.with_report(report);
            } else {
                data.compatibility = provenance.compatibility;
            }
            data.registry_version = Some(version);
            events::emit(db, &routes, kind, &data)?;
            if let Some(validators) = validators {
                store_validators(db, &state.watch, validators)?;
            }
            failpoint::hit("apply.after_state")?;
            Ok(version)
        })?;
        failpoint::hit("apply.after_commit")?;
        Ok(version)
    }
    /// Whether the accepted snapshot of `watch` was written by a release before stored sources
    /// (migration 0003): read by a narrower projection, with nothing stored to read again.
    pub fn legacy_projection(&self, watch: &str) -> Result<bool> {
        let flag: Option<i64> = self.read(|db| {
            db.query_opt(
                "SELECT legacy_projection FROM tools WHERE name = ?1",
                values![watch],
                |r| r.get(0),
            )
        })?;
        Ok(flag.is_some_and(|flag| flag != 0))
    }
    /// The one full fetch a legacy snapshot is allowed has happened: classify normally from now.
    pub fn clear_legacy_projection(&mut self, watch: &str) -> Result<()> {
        self.write(|db| {
            db.execute(
                "UPDATE tools SET legacy_projection = 0 WHERE name = ?1 AND legacy_projection <> 0",
                values![watch],
            )
        })?;
        Ok(())
    }
}

/// The columns of a `tool_versions` row that make its contract.
pub(crate) struct StoredVersion {
    pub json: String,
    pub gz: Option<Vec<u8>>,
    pub kind: Option<Kind>,
    pub digest: Option<String>,
    pub fingerprint: String,
    pub fp_version: i64,
}

/// The contract of version `version` of `tool` from its row. A contract read from its source
/// must be the one recorded (tampering): a mismatch under this fingerprint version is a bad row.
pub(crate) fn stored_version(
    db: &mut Db<'_>,
    tool: &str,
    version: i64,
    row: StoredVersion,
) -> Result<ToolSpec> {
    let key = format!("{tool}@{version}");
    let from_source = row.kind.map(|k| (k, row.digest.as_deref()));
    let spec = stored_spec(
        db,
        ("tool_versions", &key, tool),
        &row.json,
        row.gz,
        from_source,
        SharedEndpoints::default(),
    )?;
    if from_source.is_some()
        && row.json.is_empty()
        && row.fp_version == FINGERPRINT_VERSION
        && tool_fingerprint(&spec) != row.fingerprint
    {
        return Err(RegistryError::BadRow {
            table: "tool_versions",
            key,
            problem: "the stored fingerprint does not match the contract read from its source"
                .into(),
        });
    }
    Ok(spec)
}

pub(super) fn candidate_key(spec: &ToolSpec) -> String {
    if spec.namespace.is_empty() {
        spec.name.clone()
    } else {
        format!("{}.{}", spec.namespace, spec.name)
    }
}

/// A row's contract read from its source: the `source_kind` and `source_digest` columns.
type FromSource<'a> = Option<(Kind, Option<&'a str>)>;

/// A stored contract: its source normalized again (`from_source`, rows of migration 0004 on
/// whose document could be re-read), compressed JSON (`gz`, rows of migration 0003 on) or text
/// (older rows). `name` is the row's watch (what the normalizer was given).
pub(super) fn stored_spec(
    db: &mut Db<'_>,
    (table, key, name): (&'static str, &str, &str),
    json: &str,
    gz: Option<Vec<u8>>,
    from_source: FromSource<'_>,
    shared: SharedEndpoints<'_>,
) -> Result<ToolSpec> {
    if json.is_empty() && gz.is_none() {
        if let Some((kind, digest)) = from_source {
            return source_spec(db, (table, key, name), kind, digest, shared);
        }
    }
    let mut spec = match gz {
        Some(blob) => stored_json(table, key, &blob, "contract"),
        None => parse_spec(table, key, json),
    }?;
    shared.share_all(&mut spec);
    Ok(spec)
}

/// A compressed JSON value of `table`/`key`, inflated and deserialized without an
/// intermediate `Value` (the memory of a large contract is the inflated bytes plus the model).
pub(super) fn stored_json<T: serde::de::DeserializeOwned>(
    table: &'static str,
    key: &str,
    blob: &[u8],
    what: &str,
) -> Result<T> {
    codec::gunzip_json(table, key, blob, what)
}

fn parse_spec(table: &'static str, key: &str, json: &str) -> Result<ToolSpec> {
    let value = crate::core::json::parse_json(json).map_err(|e| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem: e.to_string(),
    })?;
    serde_json::from_value(value).map_err(|e| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem: format!("not a valid contract: {e}"),
    })
}

/// A contract just normalized from a document, offered to [`read_tool_given`]: when the
/// accepted snapshot is that very document (same digest, same projection, same fingerprint),
/// it is the snapshot's contract, and its stored source need not be normalized again.
#[derive(Clone, Copy)]
pub struct Fetched<'a> {
    pub digest: &'a str,
    pub spec: &'a ToolSpec,
    pub fingerprint: &'a str,
}

pub(super) fn read_tool(db: &mut Db<'_>, name: &str) -> Result<Option<StoredTool>> {
    read_tool_given(db, name, None)
}

/// The accepted registry version (the head row's).
pub(super) fn head_version(db: &mut Db<'_>) -> Result<i64> {
    db.query_opt(
        "SELECT registry_version FROM registry_head WHERE id = 1",
        &[],
        |r| r.get(0),
    )?
    .ok_or_else(|| RegistryError::Corrupt("the registry_head row is missing".into()))
}

fn read_tool_given(
    db: &mut Db<'_>,
    name: &str,
    fetched: Option<Fetched<'_>>,
) -> Result<Option<StoredTool>> {
    type Row = (
        (i64, i64, String, i64, String, String),
        (Option<Vec<u8>>, Option<Kind>, Option<String>, bool),
    );
    let row: Option<Row> = db.query_opt(
        "SELECT t.version, t.registry_version, t.fingerprint, t.fingerprint_version, t.spec_json,
                t.applied_at, COALESCE(t.spec_gz, v.spec_gz), v.source_kind, v.source_digest,
                v.tool IS NOT NULL
         FROM tools t LEFT JOIN tool_versions v ON v.tool = t.name AND v.version = t.version
         WHERE t.name = ?1",
        values![name],
        |r| {
            Ok((
                (
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ),
                (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
            ))
        },
    )?;
    let Some((
        (version, registry_version, fingerprint, fp_version, json, applied_at),
        (gz, source_kind, source_digest, has_row),
    )) = row
    else {
        return Ok(None);
    };
    // An older row keeps its text; a new one has '' there and the contract in the current
    // history row (compressed, or read from its source).
    let gz = if json.is_empty() { gz } else { None };
    let from_source = match (source_kind, json.is_empty() && gz.is_none()) {
        (Some(kind), true) => Some((kind, source_digest.as_deref())),
        _ => None,
    };
    if json.is_empty() && gz.is_none() && (from_source.is_none() || !has_row) {
        return Err(RegistryError::BadRow {
            table: "tools",
            key: name.to_string(),
            problem: format!("no stored contract (history row {version} is missing)"),
        });
    }
    // The document just fetched is the stored one: its fresh reading is the stored contract.
    let reuse = fetched.filter(|f| {
        from_source.is_some_and(|(_, d)| d == Some(f.digest))
            && fp_version == FINGERPRINT_VERSION
            && f.fingerprint == fingerprint
    });
    let spec = match reuse {
        Some(f) => f.spec.clone(),
        // The stored reading shares the endpoints the fetched one holds equally (a changed
        // document is compared with it: one copy of what did not change).
        None => stored_spec(
            db,
            ("tools", name, name),
            &json,
            gz,
            from_source,
            fetched.map_or_else(SharedEndpoints::default, |f| SharedEndpoints::of(f.spec)),
        )?,
    };
    let bad = |problem: String| RegistryError::BadRow {
        table: "tools",
        key: name.to_string(),
        problem,
    };
    if candidate_key(&spec) != name {
        return Err(bad(format!(
            "the stored contract is for {:?}",
            candidate_key(&spec)
        )));
    }
    if reuse.is_none()
        && fp_version == FINGERPRINT_VERSION
        && tool_fingerprint(&spec) != fingerprint
    {
        return Err(bad(
            "the stored fingerprint does not match the stored contract".into(),
        ));
    }
    Ok(Some(StoredTool {
        name: name.to_string(),
        version,
        registry_version,
        fingerprint,
        spec,
        applied_at,
    }))
}

pub(super) fn apply_in(
    db: &mut Db<'_>,
    spec: &ToolSpec,
    expected: Option<&CasBase>,
    provenance: &Provenance,
    keep_versions: u32,
    source: &StoredSource,
) -> Result<i64> {
    let name = candidate_key(spec);
    let current: Option<(i64, i64, String, i64)> = db.query_opt(
        "SELECT version, registry_version, fingerprint, position FROM tools WHERE name = ?1",
        values![&name],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let next_tool_version = match (&current, expected) {
        (None, None) => 1,
        (Some((v, rv, fp, _)), Some(base))
            if *rv == base.registry_version && *fp == base.fingerprint =>
        {
            v + 1
        }
        _ => return Err(RegistryError::Conflict { tool: name }),
    };
    let head = head_version(db)?;
    let new_head = head + 1;
    let fingerprint = tool_fingerprint(spec);
    // One copy of the contract, in the history row (the `tools` row reads it from there): its
    // source document when the contract can be read back from it, else the contract
    // compressed. The document itself is stored once, in `sources`.
    let derived = source.derived();
    let gz = (!derived).then(|| codec::gz_json(spec));
    store_source(db, source)?;
    let dropped = digests(
        db,
        "SELECT source_digest FROM tools WHERE name = ?1
         UNION ALL SELECT source_digest FROM tool_versions WHERE tool = ?1 AND version <= ?2",
        values![&name, next_tool_version - i64::from(keep_versions)],
    )?;
    let now = now_rfc3339();
    let position: i64 = match &current {
        Some((_, _, _, position)) => *position,
        None => db
            .query_opt(
                "SELECT COALESCE(MAX(position), 0) + 1 FROM tools",
                &[],
                |r| r.get(0),
            )?
            .unwrap_or(1),
    };
    // `spec_json = ''` with `spec_gz` NULL: the contract is the current history row's
    // (format marker of migration 0003; older rows keep their text).
    db.execute(
        UPSERT_TOOL,
        values![
            &name,
            spec.kind,
            position,
            next_tool_version,
            new_head,
            &fingerprint,
            FINGERPRINT_VERSION,
            &now,
            source.digest.as_deref()
        ],
    )?;
    db.execute(
        "INSERT INTO tool_versions (tool, version, registry_version, fingerprint, fingerprint_version,
            spec_json, applied_at, compatibility, review_id, reviewer, reason, spec_gz, source_digest,
            source_kind)
         VALUES (?1, ?2, ?3, ?4, ?5, '', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        values![
            &name,
            next_tool_version,
            new_head,
            &fingerprint,
            FINGERPRINT_VERSION,
            &now,
            provenance.compatibility,
            provenance.review_id,
            provenance.reviewer.as_deref(),
            provenance.reason.as_deref(),
            gz.as_deref(),
            source.digest.as_deref(),
            derived.then_some(spec.kind),
        ],
    )?;
    db.execute(
        "DELETE FROM tool_versions WHERE tool = ?1 AND version <= ?2",
        values![&name, next_tool_version - i64::from(keep_versions)],
    )?;
    release_sources(db, dropped)?;
    super::sunsets::write_facts(db, &name, next_tool_version, spec)?;
    let bumped = db.execute(
        "UPDATE registry_head SET registry_version = ?2 WHERE id = 1 AND registry_version = ?1",
        values![head, new_head],
    )?;
    if bumped != 1 {
        return Err(RegistryError::Conflict { tool: name });
    }
    Ok(new_head)
}

/// The accepted row of a tool, written whole: every column of `tools` is in the SET list, as
/// the `INSERT OR REPLACE` it replaces wrote every column anew (a column it did not name took
/// its default: `legacy_projection` is 0 after an apply). `?1`…`?9`: name, kind, position,
/// version, registry version, fingerprint, fingerprint version, applied at, source digest.
/// `upserts_write_every_column` checks the list against the table.
pub(super) const UPSERT_TOOL: &str = "INSERT INTO tools (name, kind, position, version,
        registry_version, fingerprint, fingerprint_version, spec_json, applied_at, spec_gz,
        source_digest, source_gz, legacy_projection)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '', ?8, NULL, ?9, NULL, 0)
     ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, position = excluded.position,
        version = excluded.version, registry_version = excluded.registry_version,
        fingerprint = excluded.fingerprint, fingerprint_version = excluded.fingerprint_version,
        spec_json = excluded.spec_json, applied_at = excluded.applied_at,
        spec_gz = excluded.spec_gz, source_digest = excluded.source_digest,
        source_gz = excluded.source_gz, legacy_projection = excluded.legacy_projection";
