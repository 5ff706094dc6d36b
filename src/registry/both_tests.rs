//! The registry's concerns moved onto the shared SQL layer (`sql`), each case one body run on
//! both backends: a fresh SQLite registry file, then a fresh PostgreSQL database of the test
//! cluster (`pg_tests::database`: skipped with a message without the cluster, failed under
//! `SCHEMAWATCH_REQUIRE_PEERS=1`), dropped afterwards.

use super::pg_tests::{database, Database};
use super::sql::values;
use super::{Registry, RegistryError, UiSession};
use crate::core::fingerprint::FINGERPRINT_VERSION;

/// A second handle on the same registry (another connection, as another process would have).
enum Again {
    Sqlite(std::path::PathBuf),
    Postgres(Database),
}

impl Again {
    fn open(&self) -> Registry {
        match self {
            Again::Sqlite(path) => Registry::open(path).unwrap(),
            Again::Postgres(db) => Registry::open_postgres(db.connect()).unwrap(),
        }
    }
}

/// Runs `case` on a fresh SQLite registry, then on a fresh PostgreSQL one; `case` gets the
/// registry, a way to open it again, and the backend's name (for its assertion messages).
fn on_both(case: impl Fn(&mut Registry, &Again, &str)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    let again = Again::Sqlite(path.clone());
    let mut sqlite = Registry::open(&path).unwrap();
    case(&mut sqlite, &again, "sqlite");
    if let Some(db) = database() {
        let again = Again::Postgres(db);
        let mut pg = again.open();
        case(&mut pg, &again, "postgresql");
    }
}

/// Counts rows with a statement outside any write transaction (a test's look behind the API).
fn count(r: &Registry, sql: &str, params: &[super::sql::Value<'_>]) -> i64 {
    r.read(|db| db.query_opt(sql, params, |row| row.get::<i64>(0)))
        .unwrap()
        .unwrap()
}

#[test]
fn ui_sessions_are_stored_looked_up_expired_and_deleted_alike_on_both_backends() {
    on_both(|r, again, backend| {
        r.create_session("t1", "ana", 100, 200).unwrap();
        let ana = UiSession {
            reviewer: "ana".into(),
            expires_at: 200,
        };
        assert_eq!(
            r.session("t1", 150).unwrap(),
            Some(ana.clone()),
            "{backend}"
        );
        // Expired at its expiry second, and unknown digests find nothing.
        assert_eq!(r.session("t1", 200).unwrap(), None, "{backend}");
        assert_eq!(r.session("t9", 150).unwrap(), None, "{backend}");
        // Another connection sees the committed session.
        assert_eq!(
            again.open().session("t1", 150).unwrap(),
            Some(ana),
            "{backend}"
        );
        // A login after t1's expiry drops t1 (looked up at an earlier time, it is gone).
        r.create_session("t2", "bo", 250, 400).unwrap();
        assert_eq!(r.session("t1", 0).unwrap(), None, "{backend}");
        // The same digest again: the row is rewritten whole.
        r.create_session("t2", "cy", 260, 500).unwrap();
        assert_eq!(
            r.session("t2", 450).unwrap(),
            Some(UiSession {
                reviewer: "cy".into(),
                expires_at: 500
            }),
            "{backend}"
        );
        assert_eq!(
            count(r, "SELECT count(*) FROM ui_sessions", &[]),
            1,
            "{backend}"
        );
        r.delete_session("t2").unwrap();
        r.delete_session("t2").unwrap();
        assert_eq!(r.session("t2", 450).unwrap(), None, "{backend}");
    });
}

#[test]
fn a_newer_projection_refuses_session_writes_on_both_backends() {
    on_both(|r, _, backend| {
        r.create_session("t1", "ana", 100, 200).unwrap();
        r.read(|db| {
            db.execute(
                "UPDATE registry_head SET fingerprint_version = ?1 WHERE id = 1",
                values![FINGERPRINT_VERSION + 1],
            )
        })
        .unwrap();
        let err = r.create_session("t2", "bo", 150, 300).unwrap_err();
        assert!(
            matches!(err, RegistryError::NewerProjection { recorded, binary }
                if recorded == FINGERPRINT_VERSION + 1 && binary == FINGERPRINT_VERSION),
            "{backend}: {err}"
        );
        assert!(r.delete_session("t1").is_err(), "{backend}");
        // Nothing written, reads still work.
        assert_eq!(r.session("t2", 200).unwrap(), None, "{backend}");
        assert!(r.session("t1", 150).unwrap().is_some(), "{backend}");
    });
}

#[test]
fn the_identity_key_is_created_once_and_kept_on_both_backends() {
    on_both(|r, again, backend| {
        assert_eq!(
            count(r, "SELECT count(*) FROM identity_key", &[]),
            0,
            "{backend}"
        );
        let key = r.identity_key().unwrap();
        assert_ne!(key, [0u8; 32], "{backend}");
        assert_eq!(r.identity_key().unwrap(), key, "{backend}");
        // Another connection reads the stored key; it never makes its own.
        assert_eq!(again.open().identity_key().unwrap(), key, "{backend}");
        assert_eq!(
            count(r, "SELECT count(*) FROM identity_key", &[]),
            1,
            "{backend}"
        );
    });
}

/// Several processes asking for the key of a new registry at once: one key, the same for all.
#[test]
fn racing_first_uses_of_the_identity_key_agree_on_both_backends() {
    on_both(|_, again, backend| {
        let barrier = std::sync::Barrier::new(4);
        let keys: Vec<[u8; 32]> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let mut r = again.open();
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        r.identity_key().unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]), "{backend}");
    });
}

const DOC: &str = r#"{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/pets":{"get":{"operationId":"listPets","responses":{"200":{"description":"ok"}}}}}}"#;

/// A current accepted snapshot of `name` whose contract is read from the source `digest`.
fn use_source(db: &mut super::sql::Db<'_>, name: &str, digest: &str) -> super::Result<u64> {
    db.execute(
        "INSERT INTO tools (name, kind, position, version, registry_version, fingerprint,
                            fingerprint_version, spec_json, applied_at, source_digest)
         VALUES (?1, 'openapi', 0, 1, 0, 'sha256:x', ?3, '', '2026-01-01T00:00:00Z', ?2)",
        values![name, digest, FINGERPRINT_VERSION],
    )
}

fn sources_count(r: &Registry, digest: &str) -> i64 {
    count(
        r,
        "SELECT count(*) FROM sources WHERE digest = ?1",
        values![digest],
    )
}

#[test]
fn a_stored_source_is_kept_once_and_released_with_its_last_use_on_both_backends() {
    use super::sources::{digests, release_sources, source_spec, store_source, StoredSource};
    use crate::core::model::Kind;
    use crate::core::normalize::SharedEndpoints;
    on_both(|r, _, backend| {
        let source = StoredSource::of(DOC.as_bytes());
        let digest = source.digest.clone().unwrap();
        for _ in 0..2 {
            r.write(|db| store_source(db, &source)).unwrap();
        }
        assert_eq!(sources_count(r, &digest), 1, "{backend}");
        r.write(|db| {
            use_source(db, "acme.a", &digest)?;
            use_source(db, "acme.b", &digest)?;
            release_sources(db, vec![digest.clone()])
        })
        .unwrap();
        assert_eq!(sources_count(r, &digest), 1, "{backend}: in use");
        // The contract read back from the stored document is the document's.
        let spec = r
            .read(|db| {
                source_spec(
                    db,
                    ("tools", "acme.a", "acme.a"),
                    Kind::Openapi,
                    Some(&digest),
                    SharedEndpoints::default(),
                )
            })
            .unwrap();
        let expected =
            crate::core::normalize::normalize(Kind::Openapi, "acme.a", DOC.as_bytes()).unwrap();
        assert_eq!(spec, expected, "{backend}");
        // One use dropped: kept; the last one dropped: released.
        for (name, left) in [("acme.a", 1), ("acme.b", 0)] {
            r.write(|db| {
                let dropped = digests(
                    db,
                    "SELECT source_digest FROM tools WHERE name = ?1",
                    values![name],
                )?;
                assert_eq!(dropped, vec![digest.clone()], "{backend}");
                db.execute("DELETE FROM tools WHERE name = ?1", values![name])?;
                release_sources(db, dropped)
            })
            .unwrap();
            assert_eq!(sources_count(r, &digest), left, "{backend}: {name} dropped");
        }
        // Gone with its last use: reading a row from it now fails closed.
        let err = r
            .read(|db| {
                source_spec(
                    db,
                    ("tools", "acme.a", "acme.a"),
                    Kind::Openapi,
                    Some(&digest),
                    SharedEndpoints::default(),
                )
            })
            .unwrap_err();
        assert!(err.to_string().contains("missing"), "{backend}: {err}");
    });
}

/// Racing writers (issue 33, item 6): several connections each storing the one shared source
/// with a row that uses it, then dropping the row and releasing the source. A source is never
/// released under a row that uses it (the head row serializes the writers) and none is left
/// behind.
#[test]
fn racing_writers_never_lose_a_shared_source_on_both_backends() {
    use super::sources::{digests, release_sources, store_source, StoredSource};
    const WRITERS: usize = 4;
    const ROUNDS: usize = 60;
    on_both(|r, again, backend| {
        let source = StoredSource::of(DOC.as_bytes());
        let digest = source.digest.clone().unwrap();
        let barrier = std::sync::Barrier::new(WRITERS);
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let mut mine = again.open();
                let (barrier, source, digest) = (&barrier, &source, &digest);
                s.spawn(move || {
                    let name = format!("acme.w{w}");
                    barrier.wait();
                    for round in 0..ROUNDS {
                        mine.write(|db| {
                            store_source(db, source)?;
                            use_source(db, &name, digest).map(drop)
                        })
                        .unwrap();
                        // Our row is committed: its source must be there.
                        assert_eq!(
                            sources_count(&mine, digest),
                            1,
                            "{backend}: writer {w} round {round}"
                        );
                        mine.write(|db| {
                            let dropped = digests(
                                db,
                                "SELECT source_digest FROM tools WHERE name = ?1",
                                values![&name],
                            )?;
                            db.execute("DELETE FROM tools WHERE name = ?1", values![&name])?;
                            release_sources(db, dropped)
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(count(r, "SELECT count(*) FROM tools", &[]), 0, "{backend}");
        assert_eq!(sources_count(r, &digest), 0, "{backend}");
    });
}

fn events(r: &Registry) -> Vec<(i64, String, Option<String>)> {
    r.read(|db| {
        db.query(
            "SELECT seq, event, watch FROM events ORDER BY seq",
            &[],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
    })
    .unwrap()
}

#[test]
fn watch_state_validators_and_their_events_are_alike_on_both_backends() {
    use super::watch::{store_validators, SourceValidators};
    use super::{Conditional, WatchState, WatchStatus};
    use crate::core::event::{ErrorClass, DEFAULT_ERROR_AFTER};
    use crate::core::model::{Compatibility, Kind};
    use crate::fetch::Validators;
    on_both(|r, again, backend| {
        assert_eq!(r.watch_state("acme.a").unwrap(), None, "{backend}");
        assert_eq!(
            r.conditional("acme.a", "d1").unwrap(),
            Conditional::default(),
            "{backend}"
        );
        let mut state = WatchState::new("acme.a", Kind::Openapi);
        state.status = WatchStatus::Unchanged;
        state.last_compatibility = Some(Compatibility::Compatible);
        state.last_checked_at = Some("2026-01-01T00:00:00Z".into());
        state.source_identity = Some("id-1".into());
        r.record_watch(&state).unwrap();
        assert_eq!(
            r.watch_state("acme.a").unwrap().as_ref(),
            Some(&state),
            "{backend}"
        );
        // Validators of the current source only; an earlier source's are dropped.
        let v1 = Validators {
            etag: Some("\"v1\"".into()),
            last_modified: None,
        };
        r.write(|db| {
            store_validators(
                db,
                "acme.a",
                SourceValidators {
                    source_digest: "d1",
                    validators: &v1,
                },
            )
        })
        .unwrap();
        assert_eq!(
            r.validators("acme.a", "d1").unwrap(),
            Some(v1.clone()),
            "{backend}"
        );
        assert_eq!(r.validators("acme.a", "d2").unwrap(), None, "{backend}");
        let c = r.conditional("acme.a", "d1").unwrap();
        assert_eq!(
            c,
            Conditional {
                fingerprint: None,
                state: Some(state.clone()),
                validators: Some(v1.clone()),
                open_review: false,
            },
            "{backend}"
        );
        assert_eq!(
            r.conditional("acme.a", "d2").unwrap().validators,
            None,
            "{backend}"
        );
        // The group commit moves `last_checked_at` forward only, and skips unknown watches.
        let moved = r
            .flush_checked(&[
                ("acme.a".into(), "2026-01-01T00:01:00Z".into()),
                ("acme.zz".into(), "2026-01-01T00:01:00Z".into()),
            ])
            .unwrap();
        assert_eq!(moved, 1, "{backend}");
        assert_eq!(
            r.flush_checked(&[("acme.a".into(), "2025-12-31T00:00:00Z".into())])
                .unwrap(),
            0,
            "{backend}"
        );
        assert_eq!(
            again
                .open()
                .watch_state("acme.a")
                .unwrap()
                .unwrap()
                .last_checked_at
                .as_deref(),
            Some("2026-01-01T00:01:00Z"),
            "{backend}"
        );
        // Failures: `refresh_failed` once, at the `error_after`-th in a row.
        for n in 1..=DEFAULT_ERROR_AFTER + 1 {
            let mut failed = state.clone();
            failed.status = WatchStatus::Error;
            failed.consecutive_failures = n;
            failed.last_error = Some(format!("failure {n}"));
            r.record_failure(&failed, ErrorClass::Timeout).unwrap();
        }
        let seen = events(r);
        assert_eq!(
            seen,
            vec![(1, "refresh_failed".to_string(), Some("acme.a".to_string()))],
            "{backend}"
        );
        // Another connection sees the same state; a reset clears it and says so.
        let other = again.open();
        let stored = other.watch_state("acme.a").unwrap().unwrap();
        assert_eq!(
            stored.consecutive_failures,
            DEFAULT_ERROR_AFTER + 1,
            "{backend}"
        );
        assert!(r.reset("acme.a").unwrap(), "{backend}");
        assert!(!r.reset("acme.nope").unwrap(), "{backend}");
        let reset = r.watch_state("acme.a").unwrap().unwrap();
        assert_eq!(
            (
                reset.status,
                reset.consecutive_failures,
                reset.last_error.clone(),
                reset.source_identity.clone()
            ),
            (WatchStatus::Idle, 0, None, None),
            "{backend}"
        );
        assert_eq!(
            events(r).last().map(|e| e.1.clone()).as_deref(),
            Some("watch_reset"),
            "{backend}"
        );
        let map = r.watch_state_map().unwrap();
        assert_eq!(map.len(), 1, "{backend}");
        assert_eq!(map.get("acme.a"), Some(&reset), "{backend}");
    });
}

/// A stored text naming no value of its type fails closed with the same typed error on both.
#[test]
fn an_unknown_stored_status_is_the_same_typed_error_on_both_backends() {
    use super::{WatchState, WatchStatus};
    use crate::core::model::Kind;
    on_both(|r, _, backend| {
        let mut state = WatchState::new("acme.a", Kind::Openapi);
        state.status = WatchStatus::Unchanged;
        r.record_watch(&state).unwrap();
        r.read(|db| {
            db.execute(
                "UPDATE watch_state SET status = 'sleeping' WHERE watch = ?1",
                values!["acme.a"],
            )
        })
        .unwrap();
        let err = r.watch_state("acme.a").unwrap_err();
        assert!(
            matches!(&err, RegistryError::UnknownValue(u) if u.text == "sleeping"),
            "{backend}: {err}"
        );
    });
}

#[test]
fn events_deliveries_sinks_and_the_lease_are_alike_on_both_backends() {
    use super::events::{AttemptResult, DeliveryQuery};
    use super::{WatchState, WatchStatus};
    use crate::core::event::{EventKind, Routes, SinkFilter};
    use crate::core::model::Kind;
    on_both(|r, again, backend| {
        r.set_routes(std::sync::Arc::new(Routes {
            sinks: vec![(
                "hook".into(),
                SinkFilter {
                    events: vec![EventKind::WatchReset],
                    ..SinkFilter::default()
                },
            )],
            ..Routes::none()
        }));
        let mut state = WatchState::new("acme.a", Kind::Openapi);
        state.status = WatchStatus::Error;
        r.record_watch(&state).unwrap();
        assert!(r.reset("acme.a").unwrap(), "{backend}");
        assert_eq!(r.event_sequence().unwrap(), 1, "{backend}");
        let (id, created) = r.registry_id().unwrap();
        assert_eq!(id.len(), 32, "{backend}: {id}");
        assert_eq!(created.len(), "2026-01-01T00:00:00Z".len(), "{backend}");
        let listed = r.events(Some("acme.a"), None, 10).unwrap();
        assert_eq!(listed.len(), 1, "{backend}");
        assert_eq!(listed[0].id, format!("{id}-1"), "{backend}");
        assert_eq!(listed[0].event, EventKind::WatchReset, "{backend}");
        assert!(
            r.events(Some("acme.b"), None, 10).unwrap().is_empty(),
            "{backend}"
        );
        assert!(r.events(None, Some(1), 10).unwrap().is_empty(), "{backend}");
        assert_eq!(
            r.pending_by_sink().unwrap(),
            vec![("hook".to_string(), 1)],
            "{backend}"
        );
        let sinks = vec!["hook".to_string()];
        let due = r.next_due_ms(&sinks).unwrap().unwrap();
        // Claimed once: a second claim before the lease ends finds nothing.
        let claimed = r.claim_due("me", due, due + 1000, 10, &sinks).unwrap();
        assert_eq!(claimed.len(), 1, "{backend}");
        assert_eq!(claimed[0].event.sequence, 1, "{backend}");
        assert!(again
            .open()
            .claim_due("other", due, due + 1000, 10, &sinks)
            .unwrap()
            .is_empty());
        // The lease moves the next due time.
        assert_eq!(
            r.next_due_ms(&sinks).unwrap(),
            Some(due + 1000),
            "{backend}"
        );
        assert!(!r
            .record_attempt(
                "other",
                1,
                "hook",
                &AttemptResult::Delivered { status: 200 }
            )
            .unwrap());
        assert!(r
            .record_attempt(
                "me",
                1,
                "hook",
                &AttemptResult::Retry {
                    status: Some(503),
                    class: "http_status".into(),
                    next_ms: due + 5000,
                }
            )
            .unwrap());
        let rows = r
            .deliveries(&DeliveryQuery {
                limit: 10,
                ..DeliveryQuery::default()
            })
            .unwrap();
        assert_eq!(rows.len(), 1, "{backend}");
        assert_eq!(
            (
                rows[0].attempts,
                rows[0].last_status,
                rows[0].last_error.as_deref(),
                rows[0].state.as_str()
            ),
            (1, Some(503), Some("http_status"), "pending"),
            "{backend}"
        );
        assert_eq!(
            r.next_due_ms(&sinks).unwrap(),
            Some(due + 5000),
            "{backend}"
        );
        // A sink no longer configured: its pending deliveries fail.
        assert_eq!(
            r.fail_removed_sinks(&["hook".into()]).unwrap(),
            0,
            "{backend}"
        );
        assert_eq!(r.fail_removed_sinks(&[]).unwrap(), 1, "{backend}");
        assert!(r.pending_by_sink().unwrap().is_empty(), "{backend}");
        // Sinks: disabled until their configuration changes.
        assert!(r
            .sync_sinks(&[("hook".into(), "c1".into())])
            .unwrap()
            .is_empty());
        r.disable_sink("hook", "410 Gone").unwrap();
        assert_eq!(
            r.sync_sinks(&[("hook".into(), "c1".into())]).unwrap(),
            vec!["hook".to_string()],
            "{backend}"
        );
        assert!(r
            .sync_sinks(&[("hook".into(), "c2".into())])
            .unwrap()
            .is_empty());
        // The delivery lease: one live holder at a time.
        assert!(
            r.acquire_delivery_lease("me", 1000, 2000).unwrap(),
            "{backend}"
        );
        let mut other = again.open();
        assert!(!other.acquire_delivery_lease("other", 1500, 2500).unwrap());
        assert!(
            other.delivery_lease_held("other", 1500).unwrap(),
            "{backend}"
        );
        assert!(other.acquire_delivery_lease("other", 2000, 3000).unwrap());
        other.release_delivery_lease("other").unwrap();
        assert!(!r.delivery_lease_held("me", 2100).unwrap(), "{backend}");
    });
}

#[test]
fn pruning_keeps_pending_rows_and_the_newest_finished_ones_on_both_backends() {
    use super::events::{now_ms, AttemptResult, DeliveryQuery};
    use super::{WatchState, WatchStatus};
    use crate::core::event::{EventKind, Routes, SinkFilter};
    use crate::core::model::Kind;
    on_both(|r, _, backend| {
        let filter = SinkFilter {
            events: vec![EventKind::WatchReset],
            ..SinkFilter::default()
        };
        r.set_routes(std::sync::Arc::new(Routes {
            sinks: vec![("a".into(), filter.clone()), ("b".into(), filter)],
            keep_events: 1,
            keep_deliveries: 1,
            ..Routes::none()
        }));
        let mut state = WatchState::new("acme.a", Kind::Openapi);
        state.status = WatchStatus::Error;
        r.record_watch(&state).unwrap();
        for _ in 0..3 {
            assert!(r.reset("acme.a").unwrap(), "{backend}");
        }
        // Pending deliveries, and the events they need, are never pruned.
        assert_eq!(r.prune_events().unwrap(), 0, "{backend}");
        let sinks = vec!["a".to_string(), "b".to_string()];
        let later = now_ms() + 60_000;
        let claimed = r.claim_due("me", later, later + 1000, 10, &sinks).unwrap();
        assert_eq!(claimed.len(), 6, "{backend}");
        for c in &claimed {
            assert!(r
                .record_attempt(
                    "me",
                    c.event.sequence,
                    &c.sink,
                    &AttemptResult::Delivered { status: 204 }
                )
                .unwrap());
        }
        // Five finished deliveries and two events beyond what is kept.
        assert_eq!(r.prune_events().unwrap(), 7, "{backend}");
        let left: Vec<(i64, String)> = r
            .deliveries(&DeliveryQuery {
                limit: 10,
                ..DeliveryQuery::default()
            })
            .unwrap()
            .into_iter()
            .map(|d| (d.sequence, d.sink))
            .collect();
        assert_eq!(left, vec![(3, "a".to_string())], "{backend}");
        let events: Vec<i64> = r
            .events(None, None, 10)
            .unwrap()
            .into_iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(events, vec![3], "{backend}");
    });
}

/// A write whose body panics or returns an error early leaves nothing behind, and the next
/// write on the same connection commits only its own rows (on PostgreSQL a session left inside
/// `BEGIN` would commit the abandoned rows with the next write).
#[test]
fn a_write_that_panics_or_fails_midway_is_rolled_back_on_both_backends() {
    on_both(|r, again, backend| {
        let insert = |db: &mut super::sql::Db<'_>, digest: &str| {
            db.execute(
                "INSERT INTO ui_sessions (token_sha256, reviewer, created_at, expires_at)
                 VALUES (?1, 'ana', '2026-01-01T00:00:00Z', 900)",
                values![digest],
            )
        };
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = r.write(|db| -> super::Result<()> {
                insert(db, "abandoned")?;
                panic!("a bug inside a write transaction");
            });
        }));
        assert!(panicked.is_err(), "{backend}");
        let err = r
            .write(|db| -> super::Result<()> {
                insert(db, "failed")?;
                Err(RegistryError::Postgres("stopped early".into()))
            })
            .unwrap_err();
        assert!(
            err.to_string().contains("stopped early"),
            "{backend}: {err}"
        );
        r.create_session("kept", "bo", 100, 900).unwrap();
        for (who, reg) in [("same", &*r), ("another", &again.open())] {
            assert_eq!(
                count(
                    reg,
                    "SELECT count(*) FROM ui_sessions WHERE token_sha256 IN ('abandoned', 'failed')",
                    &[]
                ),
                0,
                "{backend}: {who} connection"
            );
            assert_eq!(
                count(reg, "SELECT count(*) FROM ui_sessions", &[]),
                1,
                "{backend}: {who} connection"
            );
        }
    });
}

/// An open review of `watch` whose candidate is read from the stored source `digest`.
fn open_review(db: &mut super::sql::Db<'_>, watch: &str, digest: &str) -> super::Result<u64> {
    db.execute(
        "INSERT INTO sources (digest, gz) VALUES (?1, ?2) ON CONFLICT (digest) DO NOTHING",
        values![digest, &b"gz"[..]],
    )?;
    db.execute(
        "INSERT INTO reviews (watch, state, compatibility, change_count, created_at,
             base_registry_version, candidate_fingerprint, fingerprint_version,
             candidate_spec_json, report_json, source_digest)
         VALUES (?1, 'open', 'breaking', 1, '2026-01-01T00:00:00Z', 0, 'sha256:c', ?3, '', '', ?2)",
        values![watch, digest, FINGERPRINT_VERSION],
    )
}

fn events_of(r: &Registry, event: &str) -> i64 {
    count(
        r,
        "SELECT count(*) FROM events WHERE event = ?1",
        values![event],
    )
}

#[test]
fn unchanged_and_not_modified_supersede_the_open_review_and_forget_drops_all_on_both_backends() {
    use super::watch::SourceValidators;
    use super::{WatchState, WatchStatus};
    use crate::core::model::Kind;
    use crate::fetch::Validators;
    on_both(|r, again, backend| {
        let mut state = WatchState::new("acme.a", Kind::Openapi);
        state.status = WatchStatus::PendingReview;
        r.record_watch(&state).unwrap();
        let open = |r: &Registry| {
            count(
                r,
                "SELECT count(*) FROM reviews WHERE watch = 'acme.a' AND state = 'open'",
                &[],
            )
        };
        // A 304 back at the accepted contract: the open review is superseded, its source freed.
        r.write(|db| open_review(db, "acme.a", "r1")).unwrap();
        state.status = WatchStatus::Unchanged;
        r.record_not_modified(&state, true).unwrap();
        assert_eq!(open(r), 0, "{backend}");
        assert_eq!(sources_count(r, "r1"), 0, "{backend}");
        assert_eq!(events_of(r, "review_superseded"), 1, "{backend}");
        assert_eq!(
            r.watch_state("acme.a").unwrap().map(|s| s.status),
            Some(WatchStatus::Unchanged),
            "{backend}"
        );
        // Without `open_review` a review queued meanwhile is left alone.
        r.write(|db| open_review(db, "acme.a", "r2")).unwrap();
        r.record_not_modified(&state, false).unwrap();
        assert_eq!(open(r), 1, "{backend}");
        // An unchanged fetch supersedes it too and stores the advanced validators.
        let v = Validators {
            etag: Some("\"e2\"".into()),
            last_modified: None,
        };
        r.record_unchanged(
            &state,
            Some(SourceValidators {
                source_digest: "d2",
                validators: &v,
            }),
        )
        .unwrap();
        assert_eq!(open(r), 0, "{backend}");
        assert_eq!(sources_count(r, "r2"), 0, "{backend}");
        assert_eq!(events_of(r, "review_superseded"), 2, "{backend}");
        assert_eq!(
            again.open().validators("acme.a", "d2").unwrap(),
            Some(v),
            "{backend}"
        );

        // forget: the tool, its history, state, validators, reviews, rejections, sunset facts
        // and the sources only it used; the registry version moves by one.
        r.write(|db| {
            db.execute(
                "INSERT INTO sources (digest, gz) VALUES ('t1', ?1)",
                values![&b"gz"[..]],
            )?;
            use_source(db, "acme.a", "t1")?;
            db.execute(
                "INSERT INTO tool_versions (tool, version, registry_version, fingerprint,
                     fingerprint_version, spec_json, applied_at)
                 VALUES ('acme.a', 1, 1, 'sha256:x', ?1, '', '2026-01-01T00:00:00Z')",
                values![FINGERPRINT_VERSION],
            )?;
            open_review(db, "acme.a", "r3")?;
            db.execute(
                "INSERT INTO rejected_candidates (watch, fingerprint, review_id, rejected_at)
                 VALUES ('acme.a', 'sha256:r', 1, '2026-01-01T00:00:00Z')",
                &[],
            )?;
            db.execute(
                "INSERT INTO sunset_versions (watch, version) VALUES ('acme.a', 1)",
                &[],
            )?;
            db.execute(
                "INSERT INTO sunset_alerts (watch, endpoint, sunset, raised_at)
                 VALUES ('acme.a', 'GET /pets', '2027-01-01', '2026-01-01T00:00:00Z')",
                &[],
            )?;
            db.execute(
                "UPDATE registry_head SET registry_version = 5 WHERE id = 1",
                &[],
            )
        })
        .unwrap();
        assert!(r.forget("acme.a").unwrap(), "{backend}");
        for table in [
            "tools WHERE name",
            "tool_versions WHERE tool",
            "watch_state WHERE watch",
            "validators WHERE watch",
            "reviews WHERE watch",
            "rejected_candidates WHERE watch",
            "sunset_versions WHERE watch",
            "sunset_alerts WHERE watch",
        ] {
            assert_eq!(
                count(r, &format!("SELECT count(*) FROM {table} = 'acme.a'"), &[]),
                0,
                "{backend}: {table}"
            );
        }
        assert_eq!(
            count(r, "SELECT count(*) FROM sources", &[]),
            0,
            "{backend}"
        );
        assert_eq!(
            count(
                r,
                "SELECT registry_version FROM registry_head WHERE id = 1",
                &[]
            ),
            6,
            "{backend}"
        );
        let data: String = r
            .read(|db| {
                db.query_opt(
                    "SELECT data_json FROM events WHERE event = 'watch_forgotten'",
                    &[],
                    |row| row.get(0),
                )
            })
            .unwrap()
            .unwrap();
        assert!(data.contains("\"registry_version\":6"), "{backend}: {data}");
        // Forgetting again finds nothing, emits nothing and leaves the version alone.
        assert!(!again.open().forget("acme.a").unwrap(), "{backend}");
        assert_eq!(events_of(r, "watch_forgotten"), 1, "{backend}");
        assert_eq!(
            count(
                r,
                "SELECT registry_version FROM registry_head WHERE id = 1",
                &[]
            ),
            6,
            "{backend}"
        );
    });
}

/// Queues on the shared layer: once per candidate, a newer candidate supersedes, the change
/// count of the open review; a moved base is a conflict. Then several connections queueing
/// different candidates for one watch at once end with exactly one open review, and the
/// partial unique index refuses a second open review written behind the API.
#[test]
fn queued_reviews_stay_one_open_per_watch_even_when_racing_on_both_backends() {
    use super::{CasBase, Queued, StoredSource, WatchState, WatchStatus, DEFAULT_KEEP_REVIEWS};
    use crate::core::diff::classify;
    use crate::core::fingerprint::tool_fingerprint;
    use crate::core::model::Kind;
    use crate::core::normalize::openapi::normalize;
    let spec = |max: u32| {
        let doc = format!(
            r#"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{{"/pets":{{"get":{{"operationId":"listPets",
            "parameters":[{{"name":"limit","in":"query","schema":{{"type":"integer","maximum":{max}}}}}],
            "responses":{{"200":{{"description":"ok"}}}}}}}}}}}}"#
        );
        normalize("acme.pets", doc.as_bytes()).unwrap()
    };
    on_both(|r, again, backend| {
        let accepted = spec(100);
        let base = CasBase {
            registry_version: 1,
            fingerprint: tool_fingerprint(&accepted),
        };
        r.write(|db| {
            db.execute(
                "INSERT INTO tools (name, kind, position, version, registry_version, fingerprint,
                                    fingerprint_version, spec_json, applied_at)
                 VALUES ('acme.pets', 'openapi', 0, 1, 1, ?1, ?2, '', '2026-01-01T00:00:00Z')",
                values![&base.fingerprint, FINGERPRINT_VERSION],
            )
        })
        .unwrap();
        let state = WatchState {
            status: WatchStatus::PendingReview,
            ..WatchState::new("acme.pets", Kind::Openapi)
        };
        let queue = |r: &mut Registry, base: &CasBase, max: u32| {
            let candidate = spec(max);
            let report = classify(&accepted, &candidate, &Default::default());
            r.queue_review(
                base,
                &candidate,
                &report,
                &state,
                &StoredSource::none(),
                DEFAULT_KEEP_REVIEWS,
            )
        };
        let first = queue(r, &base, 50).unwrap();
        let Queued::New {
            id,
            superseded: None,
        } = first
        else {
            panic!("{backend}: {first:?}")
        };
        assert_eq!(
            queue(r, &base, 50).unwrap(),
            Queued::AlreadyOpen { id },
            "{backend}"
        );
        let second = queue(r, &base, 10).unwrap();
        let Queued::New {
            id: id2,
            superseded: Some(old),
        } = second
        else {
            panic!("{backend}: {second:?}")
        };
        assert_eq!(old, id, "{backend}");
        assert_eq!(
            r.open_review_for("acme.pets").unwrap(),
            Some(id2),
            "{backend}"
        );
        assert!(r.open_change_count("acme.pets").unwrap() > 0, "{backend}");
        assert_eq!(r.open_change_count("acme.other").unwrap(), 0, "{backend}");
        let moved = CasBase {
            registry_version: 2,
            ..base.clone()
        };
        assert!(
            matches!(queue(r, &moved, 5), Err(RegistryError::Conflict { .. })),
            "{backend}"
        );

        // Racing queues: 4 connections, 10 different candidates each, one watch.
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for w in 0..4u32 {
                let mut r = again.open();
                let (barrier, base, queue) = (&barrier, &base, &queue);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..10u32 {
                        queue(&mut r, base, 200 + w * 10 + i)
                            .unwrap_or_else(|e| panic!("{backend}: writer {w} round {i}: {e}"));
                    }
                });
            }
        });
        assert_eq!(
            count(
                r,
                "SELECT count(*) FROM reviews WHERE watch = 'acme.pets' AND state = 'open'",
                &[]
            ),
            1,
            "{backend}"
        );
        assert_eq!(
            count(r, "SELECT count(*) FROM reviews", &[]),
            42,
            "{backend}"
        );
        // Behind the API, a second open review for the watch is refused by the index.
        let second_open = r.write(|db| {
            db.execute(
                "INSERT INTO reviews (watch, state, compatibility, change_count, created_at,
                     base_registry_version, candidate_fingerprint, fingerprint_version,
                     candidate_spec_json, report_json)
                 VALUES ('acme.pets', 'open', 'breaking', 1, '2026-01-01T00:00:00Z', 1,
                     'sha256:other', ?1, '', '')",
                values![FINGERPRINT_VERSION],
            )
        });
        assert!(second_open.is_err(), "{backend}");
    });
}

/// A queued review read back (one and the list), then rejected: remembered as rejected, the
/// watch `rejected`, a second decision refused.
#[test]
fn reviews_are_read_back_and_rejected_alike_on_both_backends() {
    use super::{
        CasBase, Queued, ReviewState, StoredSource, Via, WatchState, WatchStatus,
        DEFAULT_KEEP_REVIEWS,
    };
    use crate::core::diff::classify;
    use crate::core::fingerprint::tool_fingerprint;
    use crate::core::model::Kind;
    use crate::core::normalize::openapi::normalize;
    let spec = |max: u32| {
        let doc = format!(
            r#"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{{"/pets":{{"get":{{"operationId":"listPets",
            "parameters":[{{"name":"limit","in":"query","schema":{{"type":"integer","maximum":{max}}}}}],
            "responses":{{"200":{{"description":"ok"}}}}}}}}}}}}"#
        );
        normalize("acme.pets", doc.as_bytes()).unwrap()
    };
    on_both(|r, again, backend| {
        let accepted = spec(100);
        let base = CasBase {
            registry_version: 1,
            fingerprint: tool_fingerprint(&accepted),
        };
        r.write(|db| {
            db.execute(
                "INSERT INTO tools (name, kind, position, version, registry_version, fingerprint,
                                    fingerprint_version, spec_json, applied_at)
                 VALUES ('acme.pets', 'openapi', 0, 1, 1, ?1, ?2, '', '2026-01-01T00:00:00Z')",
                values![&base.fingerprint, FINGERPRINT_VERSION],
            )
        })
        .unwrap();
        let state = WatchState {
            status: WatchStatus::PendingReview,
            ..WatchState::new("acme.pets", Kind::Openapi)
        };
        let candidate = spec(50);
        let report = classify(&accepted, &candidate, &Default::default());
        let Queued::New { id, .. } = r
            .queue_review(
                &base,
                &candidate,
                &report,
                &state,
                &StoredSource::none(),
                DEFAULT_KEEP_REVIEWS,
            )
            .unwrap()
        else {
            panic!("{backend}")
        };
        let review = again.open().review(id).unwrap();
        assert_eq!(review.state, ReviewState::Open, "{backend}");
        assert_eq!(review.watch, "acme.pets", "{backend}");
        assert_eq!(review.candidate.as_ref(), Some(&candidate), "{backend}");
        assert_eq!(review.report.as_ref(), Some(&report), "{backend}");
        assert_eq!(review.base_registry_version, 1, "{backend}");
        assert_eq!(r.reviews(true).unwrap().len(), 1, "{backend}");
        assert_eq!(r.review_document(id).unwrap(), None, "{backend}");
        assert!(
            matches!(
                r.review(id + 100),
                Err(RegistryError::ReviewNotFound { .. })
            ),
            "{backend}"
        );
        // Rebaselined in place: same id, still open, the new candidate and report.
        let (candidate, report) = {
            let newer = spec(40);
            let newer_report = classify(&accepted, &newer, &Default::default());
            assert_eq!(
                r.rebaseline_open_review("acme.pets", "sha256:none", &newer, &newer_report, &state)
                    .unwrap(),
                None,
                "{backend}"
            );
            assert_eq!(
                r.rebaseline_open_review(
                    "acme.pets",
                    &report.new_fingerprint,
                    &newer,
                    &newer_report,
                    &state
                )
                .unwrap(),
                Some(id),
                "{backend}"
            );
            (newer, newer_report)
        };
        let review = r.review(id).unwrap();
        assert_eq!(review.state, ReviewState::Open, "{backend}");
        assert_eq!(review.candidate.as_ref(), Some(&candidate), "{backend}");
        assert_eq!(
            review.candidate_fingerprint, report.new_fingerprint,
            "{backend}"
        );
        assert!(
            !r.is_rejected("acme.pets", &report.new_fingerprint).unwrap(),
            "{backend}"
        );
        r.reject_via(id, "ana", Via::Cli, "not yet").unwrap();
        assert!(
            r.is_rejected("acme.pets", &report.new_fingerprint).unwrap(),
            "{backend}"
        );
        let review = r.review(id).unwrap();
        assert_eq!(review.state, ReviewState::Rejected, "{backend}");
        assert_eq!(review.reviewer.as_deref(), Some("ana"), "{backend}");
        assert_eq!(r.reviews(true).unwrap().len(), 0, "{backend}");
        assert_eq!(r.reviews(false).unwrap().len(), 1, "{backend}");
        assert_eq!(
            r.watch_state("acme.pets").unwrap().map(|s| s.status),
            Some(WatchStatus::Rejected),
            "{backend}"
        );
        assert_eq!(events_of(r, "review_rejected"), 1, "{backend}");
        assert!(
            matches!(
                r.reject(id, "bo", "again"),
                Err(RegistryError::Superseded { .. })
            ),
            "{backend}"
        );
        assert_eq!(events_of(r, "review_rejected"), 1, "{backend}");
    });
}

/// The daemon's recount and the gateway's reader poll a connection that never writes: its
/// change token moves when another connection commits, and only then.
#[test]
fn the_change_token_moves_when_another_connection_commits_on_both_backends() {
    on_both(|writer, again, backend| {
        let observer = again.open();
        let first = observer.change_token().unwrap();
        assert_eq!(observer.change_token().unwrap(), first, "{backend}: idle");
        writer.create_session("t1", "ana", 100, 200).unwrap();
        let second = observer.change_token().unwrap();
        assert_ne!(second, first, "{backend}: a commit elsewhere");
        assert_eq!(
            observer.change_token().unwrap(),
            second,
            "{backend}: idle again"
        );
        // A write transaction that rolls back changes nothing.
        let failed: super::Result<()> = writer.write(|db| {
            db.execute("DELETE FROM ui_sessions", &[])?;
            Err(RegistryError::Postgres("stopped early".into()))
        });
        assert!(failed.is_err());
        assert_eq!(
            observer.change_token().unwrap(),
            second,
            "{backend}: rolled back"
        );
    });
}

/// The refresh calls the registry from async code on the runtime's workers. The blocking
/// PostgreSQL client would panic there (it runs its own runtime): every call, the connect and
/// the close go through `sql::off_runtime`.
#[test]
fn a_postgresql_registry_is_opened_used_and_closed_on_a_runtime_worker() {
    let Some(db) = database() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = db.connect();
    let seen = runtime.block_on(async {
        tokio::spawn(async {
            let mut r = Registry::open_postgres(client).unwrap();
            r.create_session("t1", "ana", 100, 200).unwrap();
            tokio::task::yield_now().await;
            let seen = r.session("t1", 150).unwrap();
            drop(r);
            seen
        })
        .await
        .unwrap()
    });
    assert_eq!(seen.map(|s| s.reviewer), Some("ana".to_string()));
}

/// A write that goes on after a failed statement: PostgreSQL has aborted the transaction and
/// its COMMIT would answer ROLLBACK without an error; the write reports the failure instead of
/// a success that wrote nothing.
#[test]
fn a_postgresql_write_that_swallowed_a_failed_statement_is_not_reported_committed() {
    let Some(db) = database() else {
        return;
    };
    let mut r = Registry::open_postgres(db.connect()).unwrap();
    r.create_session("t1", "ana", 100, 200).unwrap();
    let swallowed = r.write(|db| {
        // The same primary key again: refused, and the error dropped.
        let _ = db.execute(
            "INSERT INTO ui_sessions (token_sha256, reviewer, created_at, expires_at)
             VALUES ('t1', 'bo', 1, 2)",
            &[],
        );
        Ok(())
    });
    assert!(
        matches!(swallowed, Err(RegistryError::Postgres(ref m)) if m.contains("rolled back")),
        "{swallowed:?}"
    );
    // The session works on, and the next write commits.
    r.create_session("t2", "bo", 100, 200).unwrap();
    assert!(r.session("t2", 150).unwrap().is_some());
}
