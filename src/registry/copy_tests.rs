//! The registry copy on real registries: SQLite files, and PostgreSQL databases of the test
//! cluster (`pg_tests::database`: skipped with a message without it, failed under
//! `SCHEMAWATCH_REQUIRE_PEERS=1`).

use super::*;
use crate::core::diff::classify;
use crate::core::event::{EventKind, Routes, SinkFilter};
use crate::core::model::{Kind, ToolSpec};
use crate::core::normalize::openapi::normalize;
use crate::fetch::Validators;
use crate::registry::events::AttemptResult;
use crate::registry::pg_tests::database;
use crate::registry::sql::{Db, Owned};
use crate::registry::{
    CasBase, Provenance, Queued, SourceValidators, StoredSource, WatchState, WatchStatus,
};
use std::sync::{Arc, Mutex, MutexGuard};

/// The copy tests run one at a time: one of them sets the process's failpoint variable.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn doc(max: u32) -> String {
    format!(
        r#"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{{"/pets":{{"get":{{"operationId":"listPets",
        "deprecated":true,
        "parameters":[{{"name":"limit","in":"query","schema":{{"type":"integer","maximum":{max}}}}}],
        "responses":{{"200":{{"description":"ok"}}}}}}}}}}}}"#
    )
}

fn spec(watch: &str, max: u32) -> ToolSpec {
    normalize(watch, doc(max).as_bytes()).unwrap()
}

fn state(watch: &str, status: WatchStatus) -> WatchState {
    WatchState {
        status,
        last_checked_at: Some("2026-01-02T03:04:05Z".into()),
        source_identity: Some(format!("https://example.test/{watch}")),
        ..WatchState::new(watch, Kind::Openapi)
    }
}

fn base(r: &Registry, watch: &str) -> Option<CasBase> {
    r.tool(watch).unwrap().map(|t| CasBase {
        registry_version: t.registry_version,
        fingerprint: t.fingerprint,
    })
}

/// Applies `max`'s document to `watch` (registering it first), with its stored source and
/// validators, keeping 2 versions.
fn apply(r: &mut Registry, watch: &str, max: u32) {
    let validators = Validators {
        etag: Some(format!("\"{watch}-{max}\"")),
        last_modified: None,
    };
    r.apply_with_state(
        &spec(watch, max),
        base(r, watch).as_ref(),
        &Provenance::default(),
        2,
        &state(watch, WatchStatus::Applied),
        Some(SourceValidators {
            source_digest: "sha256:identity",
            validators: &validators,
        }),
        &StoredSource::of(doc(max).as_bytes()),
    )
    .unwrap();
}

fn queue(r: &mut Registry, watch: &str, max: u32) -> i64 {
    let accepted = r.tool(watch).unwrap().unwrap();
    queue_given(r, &accepted, watch, max)
}

/// [`queue`] against `accepted`, read elsewhere (contracts are not read on PostgreSQL yet).
fn queue_given(
    r: &mut Registry,
    accepted: &crate::registry::StoredTool,
    watch: &str,
    max: u32,
) -> i64 {
    let candidate = spec(watch, max);
    let report = classify(&accepted.spec, &candidate, &Default::default());
    let base = CasBase {
        registry_version: accepted.registry_version,
        fingerprint: accepted.fingerprint.clone(),
    };
    match r
        .queue_review(
            &base,
            &candidate,
            &report,
            &state(watch, WatchStatus::PendingReview),
            &StoredSource::of(doc(max).as_bytes()),
            100,
        )
        .unwrap()
    {
        Queued::New { id, .. } => id,
        other => panic!("{other:?}"),
    }
}

/// A registry with every kind of row: registered watches with applied versions beyond the
/// retention (history pruned), stored sources, validators, watch state, an accepted, a
/// rejected and an open review (and a forgotten watch's review that held the highest id),
/// events with deliveries (one delivered), a sink's state, the identity key and a UI session.
fn populate(r: &mut Registry) {
    r.set_routes(Arc::new(Routes {
        sinks: vec![(
            "hook".into(),
            SinkFilter {
                events: EventKind::ALL.to_vec(),
                ..SinkFilter::default()
            },
        )],
        ..Routes::none()
    }));
    for (watch, versions) in [("acme.a", 4), ("acme.b", 2), ("acme.c", 1), ("acme.d", 1)] {
        for v in 0..versions {
            apply(r, watch, 100 + v);
        }
    }
    let accepted = queue(r, "acme.a", 10);
    r.accept(accepted, "ana", "fine", 2).unwrap();
    let rejected = queue(r, "acme.b", 10);
    r.reject(rejected, "bo", "not yet").unwrap();
    queue(r, "acme.c", 10);
    // The highest review id so far goes with its watch: the copy must not hand it out again.
    queue(r, "acme.d", 10);
    assert!(r.forget("acme.d").unwrap());
    let mut failing = state("acme.e", WatchStatus::Error);
    failing.last_error = Some("connection refused".into());
    failing.consecutive_failures = 3;
    r.record_watch(&failing).unwrap();
    r.identity_key().unwrap();
    r.sync_sinks(&[("hook".into(), "sha256:config".into())])
        .unwrap();
    let sinks = vec!["hook".to_string()];
    let now = crate::registry::events::now_ms();
    let claimed = r.claim_due("me", now + 1, now + 1000, 1, &sinks).unwrap();
    assert_eq!(claimed.len(), 1);
    r.record_attempt(
        "me",
        claimed[0].event.sequence,
        "hook",
        &AttemptResult::Delivered { status: 204 },
    )
    .unwrap();
    r.create_session("sha256:cookie", "ana", 1, i64::MAX / 2)
        .unwrap();
}

fn sqlite_populated() -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Registry::open(&dir.path().join("source.sqlite3")).unwrap();
    populate(&mut r);
    (dir, r)
}

/// Every copied table's rows (each row's columns by name, rows sorted), and the reviews'
/// high-water mark: what must be equal on both sides of a copy.
type Dump = BTreeMap<String, Vec<Vec<(String, Owned)>>>;

fn dump(r: &Registry) -> Dump {
    r.read(|db| {
        let mut out = Dump::new();
        for t in COPIED {
            let cols = check_columns(t.name, &columns(db, t.name)?, &columns(db, t.name)?).unwrap();
            let names: Vec<String> = cols.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            let mut rows = db.query(
                &format!("SELECT {} FROM {}", names.join(", "), t.name),
                &[],
                |row| {
                    let mut named: Vec<(String, Owned)> = cols
                        .iter()
                        .enumerate()
                        .map(|(i, (n, ty))| Ok((n.clone(), row.get_owned(i, *ty)?)))
                        .collect::<crate::registry::Result<_>>()?;
                    named.sort();
                    Ok(named)
                },
            )?;
            rows.sort();
            out.insert(t.name.to_string(), rows);
        }
        out.insert(
            "reviews high-water mark".into(),
            vec![vec![(
                "seq".into(),
                Owned::I64(Some(reviews_high_water(db)?)),
            )]],
        );
        Ok(out)
    })
    .unwrap()
}

/// Rows of `table` on `r`.
fn rows(r: &Registry, table: &str) -> i64 {
    r.read(|db| count_where(db, table, None)).unwrap()
}

fn assert_empty(r: &Registry, what: &str) {
    r.read(|db| {
        for t in COPIED {
            assert_eq!(
                count_where(db, t.name, t.fresh_row_used)?,
                0,
                "{what}: {}",
                t.name
            );
        }
        Ok(())
    })
    .unwrap();
}

fn fresh_sqlite(dir: &tempfile::TempDir, name: &str) -> Registry {
    Registry::open(&dir.path().join(name)).unwrap()
}

#[test]
fn every_table_the_migrations_create_is_copied_or_skipped_with_a_reason() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let r = fresh_sqlite(&dir, "fresh.sqlite3");
    let listed: BTreeSet<String> = COPIED
        .iter()
        .map(|t| t.name.to_string())
        .chain(SKIPPED.iter().map(|(n, _)| n.to_string()))
        .collect();
    let mut backends = vec![("sqlite", r)];
    let pg = database();
    if let Some(db) = &pg {
        backends.push(("postgresql", Registry::open_postgres(db.connect()).unwrap()));
    }
    for (backend, r) in backends {
        let created: BTreeSet<String> = r
            .read(tables)
            .unwrap()
            .into_iter()
            .filter(|t| !internal(t))
            .collect();
        assert_eq!(
            created, listed,
            "{backend}: a table the migrations create is neither copied (COPIED) nor skipped with a reason (SKIPPED)"
        );
    }
}

#[test]
fn sqlite_to_sqlite_copies_every_row_and_the_review_id_high_water_mark() {
    let _serial = serial();
    let (dir, mut source) = sqlite_populated();
    let mut target = fresh_sqlite(&dir, "target.sqlite3");
    let counts = copy(&source, &mut target).unwrap();
    assert_eq!(dump(&target), dump(&source));
    // Counts: every copied table in order, the rows each holds.
    let names: Vec<&str> = counts.tables.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, COPIED.iter().map(|t| t.name).collect::<Vec<_>>());
    for (table, n) in &counts.tables {
        assert_eq!(*n as i64, rows(&source, table), "{table}");
    }
    // Every accepted contract (acme.a, b, c) and retained version (2 + 2 + 1).
    assert_eq!(rows(&source, "tool_versions"), 5);
    assert_eq!(counts.fingerprints_verified, 3 + 5);
    assert!(rows(&source, "events") > 0 && rows(&source, "deliveries") > 0);
    assert_eq!(rows(&source, "reviews"), 3);
    assert_eq!(
        counts.reviews_high_water, 4,
        "the forgotten watch's review was id 4"
    );
    // UI sessions are not carried over; the identity key and the registry id are.
    assert_eq!(rows(&target, "ui_sessions"), 0);
    assert_eq!(
        target.identity_key().unwrap(),
        source.identity_key().unwrap()
    );
    assert_eq!(target.registry_id().unwrap(), source.registry_id().unwrap());
    assert_eq!(
        target.event_sequence().unwrap(),
        source.event_sequence().unwrap()
    );
    // The next review gets the id the original's would: never the forgotten one's.
    let on_source = queue(&mut source, "acme.c", 5);
    assert_eq!(queue(&mut target, "acme.c", 5), on_source);
    assert_eq!(on_source, 5);
}

#[test]
fn sqlite_to_postgres_to_sqlite_keeps_every_row() {
    let _serial = serial();
    let Some(db) = database() else { return };
    let (dir, mut source) = sqlite_populated();
    let mut pg = Registry::open_postgres(db.connect()).unwrap();
    // SQLite to PostgreSQL without the read-back (contracts are read on PostgreSQL only once
    // that concern moves; `sqlite_to_postgres_verifies_every_fingerprint`).
    copy_rows(&source, &mut pg).unwrap();
    let original = dump(&source);
    assert_eq!(dump(&pg), original, "sqlite -> postgresql");
    let mut back = fresh_sqlite(&dir, "back.sqlite3");
    let counts = copy(&pg, &mut back).unwrap();
    assert_eq!(dump(&back), original, "postgresql -> sqlite");
    assert_eq!(counts.fingerprints_verified, 8);
    assert_eq!(counts.reviews_high_water, 4);
    // The high-water mark survived both hops: the next review is 5 on every side.
    let accepted = source.tool("acme.c").unwrap().unwrap();
    let expected = queue(&mut source, "acme.c", 5);
    assert_eq!(expected, 5);
    assert_eq!(queue(&mut back, "acme.c", 5), expected);
    assert_eq!(
        queue_given(&mut pg, &accepted, "acme.c", 5),
        expected,
        "postgresql"
    );
}

#[test]
fn sqlite_to_postgres_verifies_every_fingerprint() {
    let _serial = serial();
    let Some(db) = database() else { return };
    let (_dir, source) = sqlite_populated();
    let mut pg = Registry::open_postgres(db.connect()).unwrap();
    let counts = copy(&source, &mut pg).unwrap();
    assert_eq!(counts.fingerprints_verified, 8);
    assert_eq!(dump(&pg), dump(&source));
}

#[test]
fn a_target_holding_data_is_refused_and_left_as_it_was() {
    let _serial = serial();
    let (dir, source) = sqlite_populated();
    let mut targets = vec![("sqlite", fresh_sqlite(&dir, "target.sqlite3"))];
    let pg = database();
    if let Some(db) = &pg {
        targets.push(("postgresql", Registry::open_postgres(db.connect()).unwrap()));
    }
    for (backend, mut target) in targets {
        // A copy done once: the second is refused, the first untouched.
        copy_rows(&source, &mut target).unwrap();
        let before = dump(&target);
        let refused = copy_rows(&source, &mut target).unwrap_err();
        assert!(
            matches!(
                refused,
                CopyError::TargetNotEmpty {
                    table: "registry_head",
                    ..
                }
            ),
            "{backend}: {refused}"
        );
        assert!(refused.to_string().contains("not empty"), "{refused}");
        assert_eq!(dump(&target), before, "{backend}");
    }
    // Nor a database holding tables of its own.
    let mut foreign = fresh_sqlite(&dir, "foreign.sqlite3");
    foreign
        .write(|db| db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)", &[]))
        .unwrap();
    let refused = copy_rows(&source, &mut foreign).unwrap_err();
    assert!(
        matches!(&refused, CopyError::Schema(why) if why.contains("orders")),
        "{refused}"
    );
    assert_empty(&foreign, "a database with a foreign table");
    // A registry used only for its UI sessions is not a new one either.
    let mut sessions = fresh_sqlite(&dir, "sessions.sqlite3");
    sessions.create_session("sha256:x", "ana", 1, 2).unwrap();
    assert!(matches!(
        copy_rows(&source, &mut sessions),
        Err(CopyError::TargetNotEmpty {
            table: "ui_sessions",
            ..
        })
    ));
}

#[test]
fn a_failure_before_the_commit_leaves_the_target_empty() {
    let _serial = serial();
    if !cfg!(debug_assertions) {
        eprintln!("failpoints are compiled into debug builds only; skipped");
        return;
    }
    let (dir, source) = sqlite_populated();
    let mut targets = vec![("sqlite", fresh_sqlite(&dir, "target.sqlite3"))];
    let pg = database();
    if let Some(db) = &pg {
        targets.push(("postgresql", Registry::open_postgres(db.connect()).unwrap()));
    }
    for (backend, mut target) in targets {
        std::env::set_var("SCHEMAWATCH_FAILPOINT", "copy.before_commit=error");
        let failed = copy_rows(&source, &mut target);
        std::env::remove_var("SCHEMAWATCH_FAILPOINT");
        assert!(
            matches!(
                failed,
                Err(CopyError::Registry(RegistryError::Failpoint(
                    "copy.before_commit"
                )))
            ),
            "{backend}: {failed:?}"
        );
        assert_empty(&target, backend);
        // Still a valid target: the copy goes through once nothing fails.
        copy_rows(&source, &mut target).unwrap();
        assert_eq!(dump(&target), dump(&source), "{backend}");
    }
}

#[test]
fn a_database_url_is_never_taken_with_a_password() {
    assert!(matches!(
        Place::parse("postgresql://sw:s3cret@db.example:5432/registry"),
        Err(CopyError::PasswordInUrl)
    ));
    let shown = Place::parse("postgresql://sw:s3cret@db.example/registry")
        .unwrap_err()
        .to_string();
    assert!(!shown.contains("s3cret"), "{shown}");
    let place = Place::parse("postgresql://sw@db.example:5433/registry").unwrap();
    assert_eq!(place.shown(), "sw@db.example:5433/registry");
    assert_eq!(
        Place::parse("state/registry.sqlite3").unwrap(),
        Place::Sqlite("state/registry.sqlite3".into())
    );
    assert!(matches!(
        Place::parse("postgresql://db.example/registry"),
        Err(CopyError::Url(_))
    ));
}

/// A query against the backend of `db` must not leave the session unusable (the source's
/// snapshot is ended whatever the copy returned).
#[test]
fn the_source_snapshot_ends_when_the_copy_is_refused() {
    let _serial = serial();
    let (dir, mut source) = sqlite_populated();
    let mut target = fresh_sqlite(&dir, "target.sqlite3");
    copy_rows(&source, &mut target).unwrap();
    assert!(copy_rows(&source, &mut target).is_err());
    // The source still takes writes: no read transaction was left open on it.
    source
        .record_watch(&state("acme.f", WatchStatus::Idle))
        .unwrap();
    source
        .read(|db| {
            assert!(matches!(db, Db::Sqlite(c) if c.is_autocommit()));
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_version_missing_or_a_contract_altered_on_the_target_fails_the_read_back() {
    let _serial = serial();
    let (dir, source) = sqlite_populated();
    let mut intact = fresh_sqlite(&dir, "intact.sqlite3");
    let (_, expected) = copy_rows(&source, &mut intact).unwrap();
    assert_eq!(verify(&expected, &intact).unwrap(), 8);
    for (i, tamper) in [
        "DELETE FROM tool_versions WHERE tool = 'acme.b'
           AND version = (SELECT MIN(version) FROM tool_versions WHERE tool = 'acme.b')",
        "DELETE FROM tools WHERE name = 'acme.c'",
        "UPDATE tools SET fingerprint = 'sha256:0' WHERE name = 'acme.c'",
    ]
    .into_iter()
    .enumerate()
    {
        let mut target = fresh_sqlite(&dir, &format!("tampered{i}.sqlite3"));
        let (_, expected) = copy_rows(&source, &mut target).unwrap();
        target.write(|db| db.execute(tamper, &[])).unwrap();
        assert!(verify(&expected, &target).is_err(), "{tamper}");
    }
}
