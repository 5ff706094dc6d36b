//! Registry behaviour on a real SQLite file: CAS, version bumps, reviews, fail-closed reads,
//! and the fingerprint-version migration.

use super::*;
use crate::core::diff::classify;
use crate::core::fingerprint::tool_fingerprint;
use crate::core::normalize::openapi::normalize;
use std::path::Path;

fn doc(max: u32) -> String {
    format!(
        r#"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{{"/pets":{{"get":{{"operationId":"listPets",
        "parameters":[{{"name":"limit","in":"query","schema":{{"type":"integer","maximum":{max}}}}}],
        "responses":{{"200":{{"description":"ok"}}}}}}}}}}}}"#
    )
}

fn spec(max: u32) -> ToolSpec {
    normalize("acme.pets", doc(max).as_bytes()).unwrap()
}

fn state(status: &str) -> WatchState {
    WatchState {
        status: WatchStatus::parse(status).expect("a watch status"),
        ..WatchState::new("acme.pets", crate::core::model::Kind::Openapi)
    }
}

fn open() -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::open(&dir.path().join("nested/registry.sqlite3")).unwrap();
    (dir, registry)
}

/// What keeps a test's registry alive: its folder, or its PostgreSQL database (dropped after).
#[allow(dead_code)]
enum Keep {
    Dir(tempfile::TempDir),
    Database(super::pg_tests::Database),
}

/// A fresh registry on each backend: a SQLite file, then a PostgreSQL database of the test
/// cluster (skipped with a message without it, failed under `SCHEMAWATCH_REQUIRE_PEERS=1`).
fn registries() -> Vec<(Keep, Registry)> {
    let (dir, sqlite) = open();
    let mut out = vec![(Keep::Dir(dir), sqlite)];
    if let Some(db) = super::pg_tests::database() {
        let pg = Registry::open_postgres(db.connect()).unwrap();
        out.push((Keep::Database(db), pg));
    }
    out
}

/// Rows `sql` counts, on either backend.
fn rows(r: &Registry, sql: &str) -> i64 {
    r.read(|db| db.query_opt(sql, &[], |row| row.get::<i64>(0)))
        .unwrap()
        .unwrap()
}

#[test]
fn apply_is_compare_and_swap_and_bumps_once() {
    for (_keep, mut r) in registries() {
        assert_eq!(r.registry_version().unwrap(), 0);
        assert_eq!(
            r.apply(&spec(100), None, &Provenance::default(), 100)
                .unwrap(),
            1
        );
        // Registering again (expecting absence) loses the race.
        assert!(matches!(
            r.apply(&spec(100), None, &Provenance::default(), 100),
            Err(RegistryError::Conflict { .. })
        ));
        let current = r.tool("acme.pets").unwrap().unwrap();
        let base = CasBase {
            registry_version: current.registry_version,
            fingerprint: current.fingerprint.clone(),
        };
        assert_eq!(
            r.apply(&spec(200), Some(&base), &Provenance::default(), 100)
                .unwrap(),
            2
        );
        // The same (now stale) base cannot apply again: nothing written, no bump.
        assert!(matches!(
            r.apply(&spec(300), Some(&base), &Provenance::default(), 100),
            Err(RegistryError::Conflict { .. })
        ));
        assert_eq!(r.registry_version().unwrap(), 2);
        let history = r.history("acme.pets").unwrap();
        assert_eq!(
            history
                .iter()
                .map(|h| (h.version, h.registry_version))
                .collect::<Vec<_>>(),
            vec![(2, 2), (1, 1)]
        );
    }
}

#[test]
fn history_keeps_the_configured_number_of_versions() {
    for (_keep, mut r) in registries() {
        r.apply(&spec(1), None, &Provenance::default(), 2).unwrap();
        for max in 2..6 {
            let t = r.tool("acme.pets").unwrap().unwrap();
            let base = CasBase {
                registry_version: t.registry_version,
                fingerprint: t.fingerprint,
            };
            r.apply(&spec(max), Some(&base), &Provenance::default(), 2)
                .unwrap();
        }
        let versions: Vec<i64> = r
            .history("acme.pets")
            .unwrap()
            .iter()
            .map(|h| h.version)
            .collect();
        assert_eq!(versions, vec![5, 4]);
    }
}

#[test]
fn reviews_queue_once_supersede_and_decide() {
    for (_keep, mut r) in registries() {
        r.apply(&spec(100), None, &Provenance::default(), 100)
            .unwrap();
        let t = r.tool("acme.pets").unwrap().unwrap();
        let base = CasBase {
            registry_version: t.registry_version,
            fingerprint: t.fingerprint.clone(),
        };
        let candidate = spec(50);
        let report = classify(&t.spec, &candidate, &Default::default());
        let first = r
            .queue_review(
                &base,
                &candidate,
                &report,
                &state("pending_review"),
                &StoredSource::none(),
                DEFAULT_KEEP_REVIEWS,
            )
            .unwrap();
        let Queued::New {
            id,
            superseded: None,
        } = first
        else {
            panic!("{first:?}")
        };
        assert_eq!(
            r.queue_review(
                &base,
                &candidate,
                &report,
                &state("pending_review"),
                &StoredSource::none(),
                DEFAULT_KEEP_REVIEWS
            )
            .unwrap(),
            Queued::AlreadyOpen { id }
        );
        let newer = spec(10);
        let newer_report = classify(&t.spec, &newer, &Default::default());
        let Queued::New {
            id: id2,
            superseded,
        } = r
            .queue_review(
                &base,
                &newer,
                &newer_report,
                &state("pending_review"),
                &StoredSource::none(),
                DEFAULT_KEEP_REVIEWS,
            )
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(superseded, Some(id));
        assert_eq!(r.review(id).unwrap().state, ReviewState::Superseded);
        assert!(matches!(
            r.accept(id, "a", "b", 100),
            Err(RegistryError::Superseded { .. })
        ));
        assert_eq!(
            r.registry_version().unwrap(),
            1,
            "queueing and failed accepts do not bump"
        );
        r.reject(id2, "bob", "no").unwrap();
        assert!(r
            .is_rejected("acme.pets", &newer_report.new_fingerprint)
            .unwrap());
        assert!(matches!(
            r.reject(id2, "bob", "again"),
            Err(RegistryError::Superseded { .. })
        ));
    }
}

#[test]
fn accept_fails_when_the_base_moved() {
    for (_keep, mut r) in registries() {
        r.apply(&spec(100), None, &Provenance::default(), 100)
            .unwrap();
        let t = r.tool("acme.pets").unwrap().unwrap();
        let base = CasBase {
            registry_version: t.registry_version,
            fingerprint: t.fingerprint.clone(),
        };
        let candidate = spec(50);
        let report = classify(&t.spec, &candidate, &Default::default());
        let Queued::New { id, .. } = r
            .queue_review(
                &base,
                &candidate,
                &report,
                &state("pending_review"),
                &StoredSource::none(),
                DEFAULT_KEEP_REVIEWS,
            )
            .unwrap()
        else {
            panic!()
        };
        // Another writer moves the tool.
        r.apply(&spec(150), Some(&base), &Provenance::default(), 100)
            .unwrap();
        assert!(matches!(
            r.accept(id, "alice", "ok", 100),
            Err(RegistryError::Superseded { .. })
        ));
        assert_eq!(r.registry_version().unwrap(), 2);
    }
}

#[test]
fn corrupt_or_miskeyed_rows_fail_closed() {
    let (dir, mut r) = open();
    r.apply(&spec(100), None, &Provenance::default(), 100)
        .unwrap();
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    let conn = Connection::open(&path).unwrap();
    // The contract lives in the history row: a tool renamed without it has none at all.
    conn.execute("UPDATE tools SET name = 'other.tool'", [])
        .unwrap();
    let err = Registry::open(&path)
        .unwrap()
        .tool("other.tool")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no stored contract"), "{err}");
    conn.execute("UPDATE tool_versions SET tool = 'other.tool'", [])
        .unwrap();
    drop(conn);
    let r = Registry::open(&path).unwrap();
    let err = r.tool("other.tool").unwrap_err().to_string();
    assert!(err.contains("acme.pets"), "{err}");
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE tools SET name = 'acme.pets', spec_json = '{\"not\":\"a spec\"}'",
        [],
    )
    .unwrap();
    conn.execute("UPDATE tool_versions SET tool = 'acme.pets'", [])
        .unwrap();
    drop(conn);
    let err = r.tool("acme.pets").unwrap_err().to_string();
    assert!(err.contains("not a valid contract"), "{err}");
}

#[test]
fn older_fingerprint_versions_are_recomputed_without_drift() {
    let (dir, mut r) = open();
    r.apply(&spec(100), None, &Provenance::default(), 100)
        .unwrap();
    let fingerprint = r.tool("acme.pets").unwrap().unwrap().fingerprint;
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE tools SET fingerprint = 'sha256:old', fingerprint_version = 0",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE tool_versions SET fingerprint = 'sha256:old', fingerprint_version = 0",
        [],
    )
    .unwrap();
    drop(conn);
    let r = Registry::open(&path).unwrap();
    let t = r.tool("acme.pets").unwrap().unwrap();
    assert_eq!(t.fingerprint, fingerprint);
    assert_eq!(r.history("acme.pets").unwrap()[0].fingerprint, fingerprint);
    assert_eq!(
        r.registry_version().unwrap(),
        1,
        "re-fingerprinting is not a contract change"
    );
}

#[test]
fn a_stored_fingerprint_that_does_not_match_its_contract_fails_closed() {
    let (dir, mut r) = open();
    r.apply(&spec(100), None, &Provenance::default(), 100)
        .unwrap();
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    let conn = Connection::open(&path).unwrap();
    conn.execute("UPDATE tools SET fingerprint = 'sha256:tampered'", [])
        .unwrap();
    drop(conn);
    let r = Registry::open(&path).unwrap();
    assert!(r
        .tool("acme.pets")
        .unwrap_err()
        .to_string()
        .contains("does not match"));
}

#[test]
fn a_newer_schema_is_refused() {
    let (dir, r) = open();
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    assert!(matches!(
        Registry::open(&path),
        Err(RegistryError::TooNew { found: 99, .. })
    ));
}

#[test]
fn a_damaged_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.sqlite3");
    std::fs::write(
        &path,
        b"this is not a database, just some bytes that are long enough to matter",
    )
    .unwrap();
    assert!(Registry::open(&path).is_err());
}

#[test]
fn forget_removes_everything_and_bumps() {
    for (_keep, mut r) in registries() {
        r.apply(&spec(100), None, &Provenance::default(), 100)
            .unwrap();
        r.record_watch(&state("registered")).unwrap();
        assert!(r.forget("acme.pets").unwrap());
        assert!(r.tool("acme.pets").unwrap().is_none());
        assert!(r.watch_state("acme.pets").unwrap().is_none());
        assert_eq!(r.registry_version().unwrap(), 2);
        assert!(!r.forget("acme.pets").unwrap());
    }
}

#[test]
fn a_read_only_open_names_an_older_schema_as_older() {
    let (dir, r) = open();
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 0).unwrap();
    drop(conn);
    let error = Registry::open_read_only(&path).err().expect("refused");
    assert!(
        matches!(error, RegistryError::TooOld { found: 0, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("older"), "{error}");
}

#[test]
fn compressed_rows_are_checked_against_their_fingerprint() {
    let (dir, mut r) = open();
    r.apply(&spec(100), None, &Provenance::default(), 100)
        .unwrap();
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    let conn = Connection::open(&path).unwrap();
    let (text, gz): (String, Option<Vec<u8>>) = conn
        .query_row("SELECT spec_json, spec_gz FROM tool_versions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(text.is_empty() && gz.is_some(), "stored compressed");
    conn.execute(
        "UPDATE tool_versions SET spec_gz = ?1",
        [codec::gz_json(&spec(5))],
    )
    .unwrap();
    drop(conn);
    let r = Registry::open(&path).unwrap();
    let err = r.tool("acme.pets").unwrap_err().to_string();
    assert!(err.contains("does not match"), "{err}");
}

#[test]
fn uncompressed_rows_of_older_releases_still_read() {
    let (dir, mut r) = open();
    r.apply(&spec(100), None, &Provenance::default(), 100)
        .unwrap();
    let fingerprint = r.tool("acme.pets").unwrap().unwrap().fingerprint;
    drop(r);
    let path = dir.path().join("nested/registry.sqlite3");
    let conn = Connection::open(&path).unwrap();
    let text = crate::core::json::to_canonical_string(&serde_json::to_value(spec(100)).unwrap());
    conn.execute("UPDATE tools SET spec_json = ?1, spec_gz = NULL", [&text])
        .unwrap();
    conn.execute(
        "UPDATE tool_versions SET spec_json = ?1, spec_gz = NULL",
        [&text],
    )
    .unwrap();
    drop(conn);
    let r = Registry::open(&path).unwrap();
    assert_eq!(
        r.tool("acme.pets").unwrap().unwrap().fingerprint,
        fingerprint
    );
    assert_eq!(r.snapshots("acme.pets").unwrap().len(), 1);
}

#[test]
fn closed_reviews_beyond_keep_reviews_keep_their_metadata_only() {
    for (_keep, mut r) in registries() {
        r.apply(&spec(100), None, &Provenance::default(), 100)
            .unwrap();
        let t = r.tool("acme.pets").unwrap().unwrap();
        let base = CasBase {
            registry_version: t.registry_version,
            fingerprint: t.fingerprint.clone(),
        };
        let mut ids = Vec::new();
        for max in [10, 20, 30, 40, 50] {
            let candidate = spec(max);
            let report = classify(&t.spec, &candidate, &Default::default());
            let source = StoredSource::of(doc(max).as_bytes());
            match r
                .queue_review(
                    &base,
                    &candidate,
                    &report,
                    &state("pending_review"),
                    &source,
                    2,
                )
                .unwrap()
            {
                Queued::New { id, .. } => ids.push(id),
                other => panic!("{other:?}"),
            }
        }
        // Four superseded, one open: the two newest closed ones keep their candidate.
        for (i, id) in ids.iter().enumerate() {
            let review = r.review(*id).unwrap();
            let pruned = i < 2;
            assert_eq!(review.pruned_at.is_some(), pruned, "review {i}");
            assert_eq!(review.candidate.is_none(), pruned, "review {i}");
            assert_eq!(review.report.is_none(), pruned, "review {i}");
            assert!(review.change_count > 0 && review.candidate_fingerprint.starts_with("sha256:"));
        }
        let open = r.review(ids[4]).unwrap();
        assert_eq!(open.state, ReviewState::Open);
        assert!(r.accept(ids[4], "alice", "ok", 100).is_ok());
    }
}

/// Registers `doc` (an MCP tools list) with its source and HTTP validators on each backend,
/// then makes the stored rows look written under an older projection whose contract `aged`
/// edits. The registry is closed: opening it again runs the projection upgrade.
fn registered_then_aged(doc: &str, aged: impl Fn(&mut ToolSpec)) -> Vec<Keep> {
    let mut out = Vec::new();
    for (keep, mut r) in registries() {
        let spec = crate::core::normalize::mcp::normalize("acme.tools", doc.as_bytes()).unwrap();
        let state = WatchState {
            status: WatchStatus::Registered,
            ..WatchState::new("acme.tools", crate::core::model::Kind::Mcp)
        };
        r.apply_with_state(
            &spec,
            None,
            &Provenance::default(),
            100,
            &state,
            Some(super::SourceValidators {
                source_digest: "digest",
                validators: &crate::fetch::Validators {
                    etag: Some("\"v1\"".into()),
                    last_modified: None,
                },
            }),
            &StoredSource::of(doc.as_bytes()),
        )
        .unwrap();
        assert_eq!(
            r.validators("acme.tools", "digest").unwrap(),
            Some(crate::fetch::Validators {
                etag: Some("\"v1\"".into()),
                last_modified: None,
            })
        );
        let mut old = spec.clone();
        aged(&mut old);
        let gz = codec::gz_json(&old);
        r.write(|db| {
            db.execute(
                "UPDATE tool_versions SET spec_gz = ?1, fingerprint = 'sha256:old', fingerprint_version = 0",
                sql::values![&gz],
            )?;
            db.execute(
                "UPDATE tools SET fingerprint = 'sha256:old', fingerprint_version = 0",
                &[],
            )?;
            // As a registry last written by the older binary records it.
            db.execute("UPDATE registry_head SET fingerprint_version = 0", &[])
        })
        .unwrap();
        out.push(keep);
    }
    out
}

impl Keep {
    /// The registry kept, opened again (another connection, as a restarted process would).
    fn reopen(&self) -> Registry {
        match self {
            Keep::Dir(dir) => Registry::open(&dir.path().join("nested/registry.sqlite3")).unwrap(),
            Keep::Database(db) => Registry::open_postgres(db.connect()).unwrap(),
        }
    }
}

#[test]
fn a_projection_bump_re_reads_the_source_and_clears_validators() {
    let doc = r#"{"tools":[{"name":"read","description":"Reads a file.","inputSchema":{"type":"object"}}]}"#;
    for keep in registered_then_aged(doc, |s| {
        std::sync::Arc::make_mut(&mut s.endpoints[0]).description = None
    }) {
        let r = keep.reopen();
        let fresh = crate::core::normalize::mcp::normalize("acme.tools", doc.as_bytes()).unwrap();
        let t = r.tool("acme.tools").unwrap().unwrap();
        assert_eq!(
            t.fingerprint,
            tool_fingerprint(&fresh),
            "re-read from the source"
        );
        assert_eq!(
            t.spec.endpoints[0].description.as_deref(),
            Some("Reads a file.")
        );
        let history = r.history("acme.tools").unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].note.as_deref(), Some("projection-upgrade"));
        assert_eq!(r.registry_version().unwrap(), 1, "not a contract change");
        assert_eq!(r.validators("acme.tools", "digest").unwrap(), None);
    }
}

#[test]
fn newly_read_text_with_hidden_characters_is_not_baselined() {
    let doc = r#"{"tools":[{"name":"read","description":"Reads a file.\udb40\udc41","inputSchema":{"type":"object"}}]}"#;
    for keep in registered_then_aged(doc, |s| {
        std::sync::Arc::make_mut(&mut s.endpoints[0]).description = Some("Reads a file.".into())
    }) {
        let r = keep.reopen();
        let t = r.tool("acme.tools").unwrap().unwrap();
        // Re-fingerprinted from the stored contract, not from the source: the next fetch
        // classifies the hidden characters (`hidden-text-added`).
        assert_eq!(
            t.spec.endpoints[0].description.as_deref(),
            Some("Reads a file.")
        );
        assert_eq!(r.history("acme.tools").unwrap()[0].note, None);
    }
}

fn count(path: &Path, sql: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[test]
fn contracts_are_read_from_their_one_stored_source_which_is_dropped_with_its_last_use() {
    let (dir, mut r) = open();
    let path = dir.path().join("nested/registry.sqlite3");
    let apply = |r: &mut Registry, max: u32| {
        let base = r.tool("acme.pets").unwrap().map(|t| CasBase {
            registry_version: t.registry_version,
            fingerprint: t.fingerprint,
        });
        r.apply_with_state(
            &spec(max),
            base.as_ref(),
            &Provenance::default(),
            2,
            &state("applied"),
            None,
            &StoredSource::of(doc(max).as_bytes()),
        )
        .unwrap();
    };
    apply(&mut r, 100);
    // One copy: the source, shared by the `tools` row and its history row; no contract.
    assert_eq!(count(&path, "SELECT count(*) FROM sources"), 1);
    assert_eq!(
        count(
            &path,
            "SELECT count(*) FROM tool_versions WHERE spec_gz IS NULL AND source_kind = 'openapi'"
        ),
        1
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM tools WHERE source_gz IS NULL"),
        1
    );
    let t = r.tool("acme.pets").unwrap().unwrap();
    assert_eq!(tool_fingerprint(&t.spec), tool_fingerprint(&spec(100)));
    assert_eq!(t.spec.endpoints, spec(100).endpoints);

    // A review candidate of another document, then accepted: still one copy of each document.
    let report = classify(&t.spec, &spec(10), &Default::default());
    let base = CasBase {
        registry_version: t.registry_version,
        fingerprint: t.fingerprint.clone(),
    };
    let Queued::New { id, .. } = r
        .queue_review(
            &base,
            &spec(10),
            &report,
            &state("pending_review"),
            &StoredSource::of(doc(10).as_bytes()),
            100,
        )
        .unwrap()
    else {
        panic!("queued")
    };
    assert_eq!(count(&path, "SELECT count(*) FROM sources"), 2);
    let review = r.review(id).unwrap();
    assert_eq!(
        review.candidate.map(|c| tool_fingerprint(&c)),
        Some(tool_fingerprint(&spec(10)))
    );
    r.accept(id, "alice", "ok", 2).unwrap();
    assert_eq!(count(&path, "SELECT count(*) FROM sources"), 2);
    let snapshots = r.snapshots("acme.pets").unwrap();
    assert_eq!(
        snapshots
            .iter()
            .map(|(_, _, s)| tool_fingerprint(s))
            .collect::<Vec<_>>(),
        vec![tool_fingerprint(&spec(100)), tool_fingerprint(&spec(10))]
    );

    // `keep_versions = 2`: version 1 leaves the history, and its document (no other row
    // uses it) goes with it.
    apply(&mut r, 200);
    assert_eq!(count(&path, "SELECT count(*) FROM tool_versions"), 2);
    assert_eq!(count(&path, "SELECT count(*) FROM sources"), 2);
    assert_eq!(
        count(
            &path,
            &format!(
                "SELECT count(*) FROM sources WHERE digest = '{}'",
                codec::source_digest(doc(100).as_bytes())
            )
        ),
        0
    );
    assert!(r.forget("acme.pets").unwrap());
    assert_eq!(count(&path, "SELECT count(*) FROM sources"), 0);
}

#[test]
fn a_document_that_could_spell_hidden_text_keeps_its_contract_beside_its_source() {
    let (dir, mut r) = open();
    let path = dir.path().join("nested/registry.sqlite3");
    let text = doc(100).replace("\"title\":\"t\"", "\"title\":\"t\\u0021\"");
    let spec = normalize("acme.pets", text.as_bytes()).unwrap();
    r.apply_with_state(
        &spec,
        None,
        &Provenance::default(),
        100,
        &state("registered"),
        None,
        &StoredSource::of(text.as_bytes()),
    )
    .unwrap();
    assert_eq!(
        count(
            &path,
            "SELECT count(*) FROM tool_versions WHERE spec_gz IS NOT NULL AND source_kind IS NULL"
        ),
        1
    );
    // The source is kept for a projection upgrade (the current accepted snapshot).
    assert_eq!(count(&path, "SELECT count(*) FROM sources"), 1);
    assert_eq!(
        r.tool("acme.pets").unwrap().unwrap().fingerprint,
        tool_fingerprint(&spec)
    );
}

/// Watch-state moves write their events with the move: `refresh_failed` once per streak at
/// `error_after`, `watch_recovered` only after it, `watch_stale` on the move into stale,
/// `watch_reset` and `watch_forgotten` with their writes;
/// matching sinks get one delivery each, others none.
#[test]
fn state_moves_write_their_events_once_and_route_to_matching_sinks() {
    use crate::core::event::{EventKind, Routes, SinkFilter};
    for (_keep, mut r) in registries() {
        let mut routes = Routes::none();
        routes.error_after = 2;
        routes.sinks = vec![
            (
                "failures".into(),
                SinkFilter {
                    events: vec![EventKind::RefreshFailed, EventKind::WatchRecovered],
                    ..SinkFilter::default()
                },
            ),
            (
                "elsewhere".into(),
                SinkFilter {
                    events: EventKind::ALL.to_vec(),
                    watches: vec![glob::Pattern::new("other.*").unwrap()],
                    ..SinkFilter::default()
                },
            ),
        ];
        r.set_routes(std::sync::Arc::new(routes));
        let kinds = |r: &Registry| -> Vec<&'static str> {
            let mut e = r.events(None, None, 100).unwrap();
            e.reverse();
            e.iter().map(|e| e.event.as_str()).collect()
        };
        let mut s = state("error");
        for failures in 1..=4 {
            s.consecutive_failures = failures;
            r.record_failure(&s, crate::core::event::ErrorClass::Timeout)
                .unwrap();
        }
        assert_eq!(kinds(&r), ["refresh_failed"]);
        let failed = &r.events(None, None, 1).unwrap()[0];
        assert_eq!(
            failed.data.error_class,
            Some(crate::core::event::ErrorClass::Timeout)
        );
        assert_eq!(failed.data.consecutive_failures, Some(2));
        let mut ok = state("unchanged");
        r.record_watch(&ok).unwrap();
        r.record_watch(&ok).unwrap();
        assert_eq!(kinds(&r), ["refresh_failed", "watch_recovered"]);
        // A single failure (below error_after) and its end: no event.
        s.consecutive_failures = 1;
        r.record_failure(&s, crate::core::event::ErrorClass::Connect)
            .unwrap();
        r.record_watch(&ok).unwrap();
        assert_eq!(kinds(&r).len(), 2);
        ok.status = WatchStatus::Stale;
        r.record_watch(&ok).unwrap();
        r.record_watch(&ok).unwrap();
        assert!(r.reset("acme.pets").unwrap());
        assert!(r.forget("acme.pets").unwrap());
        assert_eq!(
            kinds(&r),
            [
                "refresh_failed",
                "watch_recovered",
                "watch_stale",
                "watch_reset",
                "watch_forgotten"
            ]
        );
        // Sequences are gap-free; ids carry the registry id.
        let (registry_id, _) = r.registry_id().unwrap();
        let events = r.events(None, None, 100).unwrap();
        assert_eq!(r.event_sequence().unwrap(), 5);
        for (i, e) in events.iter().rev().enumerate() {
            assert_eq!(e.sequence, i as i64 + 1);
            assert_eq!(e.id, format!("{registry_id}-{}", e.sequence));
        }
        // Deliveries: the two failure events to `failures`, nothing to `elsewhere`.
        let rows = r
            .deliveries(&crate::registry::events::DeliveryQuery {
                limit: 100,
                ..Default::default()
            })
            .unwrap();
        let mut got: Vec<(String, String)> = rows.into_iter().map(|d| (d.sink, d.event)).collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("failures".to_string(), "refresh_failed".to_string()),
                ("failures".to_string(), "watch_recovered".to_string())
            ]
        );
    }
}

#[test]
fn ui_sessions_are_stored_by_digest_expire_and_never_bump_the_registry_version() {
    for (_keep, mut r) in registries() {
        let before = r.registry_version().unwrap();
        r.create_session("digest-a", "alice", 100, 200).unwrap();
        assert_eq!(
            r.session("digest-a", 150).unwrap(),
            Some(UiSession {
                reviewer: "alice".into(),
                expires_at: 200
            })
        );
        assert_eq!(r.session("digest-a", 200).unwrap(), None, "absolute expiry");
        assert_eq!(r.session("digest-b", 150).unwrap(), None);
        // A later sign-in drops expired rows.
        r.create_session("digest-b", "bob", 300, 400).unwrap();
        assert_eq!(rows(&r, "SELECT COUNT(*) FROM ui_sessions"), 1);
        r.delete_session("digest-b").unwrap();
        assert_eq!(r.session("digest-b", 350).unwrap(), None);
        assert_eq!(r.registry_version().unwrap(), before);
    }
}

/// A stored kind, compatibility or status that names nothing this release knows (a newer
/// release's, or a hand edit) is a typed error naming the column and the text, never a panic
/// or a guess; the rows that still parse read as before.
#[test]
fn unknown_stored_text_is_a_typed_error() {
    let (dir, mut r) = open();
    let provenance = Provenance {
        compatibility: Some(Compatibility::Breaking),
        ..Provenance::default()
    };
    r.apply(&spec(1), None, &provenance, 10).unwrap();
    r.record_watch(&state("applied")).unwrap();
    assert_eq!(
        r.history("acme.pets").unwrap()[0].compatibility,
        Some(Compatibility::Breaking)
    );
    assert_eq!(
        r.watch_state("acme.pets").unwrap().unwrap().kind,
        Kind::Openapi
    );
    let raw = Connection::open(dir.path().join("nested/registry.sqlite3")).unwrap();
    raw.execute("UPDATE watch_state SET kind = 'soap'", [])
        .unwrap();
    raw.execute("UPDATE tool_versions SET compatibility = 'fine'", [])
        .unwrap();
    let unknown = |e: RegistryError| match e {
        RegistryError::UnknownValue(u) => (u.what, u.text),
        other => panic!("not an unknown value: {other:?}"),
    };
    assert_eq!(
        unknown(r.watch_state("acme.pets").unwrap_err()),
        ("kind", "soap".to_string())
    );
    assert_eq!(
        unknown(r.watch_states().unwrap_err()),
        ("kind", "soap".to_string())
    );
    assert_eq!(
        unknown(r.history("acme.pets").unwrap_err()),
        ("compatibility", "fine".to_string())
    );
    let message = RegistryError::UnknownValue(UnknownText {
        what: "kind",
        text: "soap".into(),
    })
    .to_string();
    assert_eq!(message, "registry row holds an unknown kind \"soap\"");
    // The accepted contract itself is untouched by either column.
    assert!(r.tool("acme.pets").unwrap().is_some());
}

/// An apply writes the tool's accepted row whole, as the `INSERT OR REPLACE` the upsert
/// replaced did: a column the statement does not take from its caller gets its default again,
/// here `legacy_projection` (an upsert that left it out of its SET list would keep the 1).
#[test]
fn an_apply_rewrites_the_whole_accepted_row() {
    for (_keep, mut r) in registries() {
        r.apply(&spec(100), None, &Provenance::default(), 100)
            .unwrap();
        let current = r.tool("acme.pets").unwrap().unwrap();
        let base = CasBase {
            registry_version: current.registry_version,
            fingerprint: current.fingerprint.clone(),
        };
        r.write(|db| {
            db.execute(
                "UPDATE tools SET legacy_projection = 1, source_gz = ?1 WHERE name = 'acme.pets'",
                sql::values![&[0u8][..]],
            )
        })
        .unwrap();
        assert!(r.legacy_projection("acme.pets").unwrap());
        r.apply(&spec(200), Some(&base), &Provenance::default(), 100)
            .unwrap();
        assert!(!r.legacy_projection("acme.pets").unwrap());
        let (spec_gz, source_gz): (Option<Vec<u8>>, Option<Vec<u8>>) = r
            .read(|db| {
                db.query_opt(
                    "SELECT spec_gz, source_gz FROM tools WHERE name = 'acme.pets'",
                    &[],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
            })
            .unwrap()
            .unwrap();
        assert_eq!(
            (spec_gz, source_gz),
            (None, None),
            "written NULL, as before"
        );
        assert_eq!(r.tool("acme.pets").unwrap().unwrap().spec, spec(200));
    }
}

/// Every upsert that replaced an `INSERT OR REPLACE` names every column of its table and sets
/// every one that is not the conflict key from `excluded`: a column a later migration adds
/// fails here until the statement writes it (else an update would keep its old value).
#[test]
fn upserts_write_every_column() {
    let (_dir, mut r) = open();
    for (table, key, sql) in [
        ("tools", &["name"][..], super::contracts::UPSERT_TOOL),
        (
            "rejected_candidates",
            &["watch", "fingerprint"][..],
            super::reviews::UPSERT_REJECTED,
        ),
        (
            "ui_sessions",
            &["token_sha256"][..],
            super::ui::UPSERT_SESSION,
        ),
    ] {
        let squeezed: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut stmt = r
            .conn_mut()
            .unwrap()
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .unwrap();
        let columns: Vec<String> = stmt
            .query_map([table], |row| row.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert!(columns.len() >= 4, "{table}: {columns:?}");
        let (insert, update) = squeezed
            .split_once(" ON CONFLICT ")
            .unwrap_or_else(|| panic!("{table}: no ON CONFLICT in {squeezed}"));
        assert!(
            update.starts_with(&format!("({}) DO UPDATE SET ", key.join(", "))),
            "{table}: {update}"
        );
        for column in &columns {
            assert!(
                insert.contains(&format!(" {column},"))
                    || insert.contains(&format!("({column},"))
                    || insert.contains(&format!(" {column})")),
                "{table}.{column} is not inserted: {insert}"
            );
            let set = format!("{column} = excluded.{column}");
            assert_eq!(
                update.contains(&set),
                !key.contains(&column.as_str()),
                "{table}.{column}: the SET list must write every column but the key: {update}"
            );
        }
    }
}
