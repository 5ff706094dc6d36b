//! Several processes writing one registry at once, and a writer killed mid-transaction, on
//! both backends (issue 33, item 6). The writers are this test binary run again as child
//! processes (`writer_process`, ignored in a normal run), each with its own connection, as
//! several daemons and CLI commands would be.
//!
//! What the races must not break: the registry version is gap-free and moves once per
//! committed apply; the compare-and-swap lets exactly one of two writers with the same base
//! win; shared source blobs are never dropped while a row uses them, nor left behind when none
//! does; and a writer killed inside its transaction leaves nothing of it.

use super::pg_tests::{connect_named, database};
use super::{CasBase, Provenance, Registry, RegistryError, StoredSource, WatchState, WatchStatus};
use crate::core::model::{Kind, ToolSpec};
use std::process::{Command, Stdio};

const WATCH: &str = "acme.pets";
/// What the child is: `race` (applies in a loop) or `abort` (dies inside one apply).
const ROLE: &str = "SCHEMAWATCH_TEST_WRITER_ROLE";
/// Where the registry is: `sqlite:<path>` or `postgresql:<database>`.
const AT: &str = "SCHEMAWATCH_TEST_WRITER_AT";
const ID: &str = "SCHEMAWATCH_TEST_WRITER_ID";
/// Applies each racing writer commits.
const APPLIES: usize = 12;
const WRITERS: usize = 4;
/// Retained versions: small, so every apply also prunes a version and may release its source.
const KEEP: u32 = 2;

/// One of three documents: writers apply the same ones, so their sources are shared blobs
/// stored and released concurrently.
fn doc(n: usize) -> String {
    format!(
        r#"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{{"/pets":{{"get":{{"operationId":"listPets",
        "parameters":[{{"name":"limit","in":"query","schema":{{"type":"integer","maximum":{}}}}}],
        "responses":{{"200":{{"description":"ok"}}}}}}}}}}}}"#,
        100 + n % 3
    )
}

fn spec(doc: &str) -> ToolSpec {
    crate::core::normalize::normalize(Kind::Openapi, WATCH, doc.as_bytes()).unwrap()
}

fn open_at(at: &str) -> Registry {
    match at.split_once(':') {
        Some(("sqlite", path)) => Registry::open(std::path::Path::new(path)).unwrap(),
        Some(("postgresql", name)) => {
            Registry::open_postgres(connect_named(name).expect("the test cluster")).unwrap()
        }
        _ => panic!("{AT}={at}"),
    }
}

/// Applies the next document on the accepted contract, as a refresh does: read, then
/// compare-and-swap on what was read.
fn apply_next(r: &mut Registry, n: usize) -> Result<i64, RegistryError> {
    let doc = doc(n);
    let base = r.tool(WATCH)?.map(|t| CasBase {
        registry_version: t.registry_version,
        fingerprint: t.fingerprint,
    });
    let state = WatchState {
        status: WatchStatus::Applied,
        ..WatchState::new(WATCH, Kind::Openapi)
    };
    r.apply_with_state(
        &spec(&doc),
        base.as_ref(),
        &Provenance::default(),
        KEEP,
        &state,
        None,
        &StoredSource::of(doc.as_bytes()),
    )
}

/// The child process: run only when a parent test starts it (ignored otherwise).
#[test]
#[ignore = "a child process of the racing-writer tests, started by them"]
fn writer_process() {
    let (Ok(role), Ok(at)) = (std::env::var(ROLE), std::env::var(AT)) else {
        return;
    };
    let id: usize = std::env::var(ID).unwrap().parse().unwrap();
    let mut r = open_at(&at);
    match role.as_str() {
        "race" => {
            let (mut applied, mut conflicts) = (0, 0);
            let mut n = id;
            while applied < APPLIES {
                match apply_next(&mut r, n) {
                    Ok(_) => {
                        applied += 1;
                        n += 1;
                    }
                    Err(RegistryError::Conflict { .. }) => conflicts += 1,
                    Err(e) => panic!("writer {id}: {e}"),
                }
            }
            println!("writer-result applied={applied} conflicts={conflicts}");
        }
        // SCHEMAWATCH_FAILPOINT (set by the parent) aborts the process inside the apply.
        "abort" => {
            let _ = apply_next(&mut r, id);
            panic!("the failpoint did not abort the writer");
        }
        other => panic!("{ROLE}={other}"),
    }
}

fn spawn(role: &str, at: &str, id: usize, failpoint: Option<&str>) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "registry::race_tests::writer_process",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .env(AT, at)
    .env(ID, id.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    match failpoint {
        Some(f) => cmd.env("SCHEMAWATCH_FAILPOINT", f),
        None => cmd.env_remove("SCHEMAWATCH_FAILPOINT"),
    };
    cmd.spawn().unwrap()
}

/// Each backend's fresh registry with the watch registered, and where a child finds it.
fn each_backend(case: impl Fn(&mut Registry, &str, &str)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.sqlite3");
    let at = format!("sqlite:{}", path.display());
    let mut r = open_at(&at);
    apply_next(&mut r, 0).unwrap();
    case(&mut r, &at, "sqlite");
    drop(r);
    if let Some(db) = database() {
        let at = format!("postgresql:{}", db.name());
        let mut r = open_at(&at);
        apply_next(&mut r, 0).unwrap();
        case(&mut r, &at, "postgresql");
    }
}

/// Every source digest a row names is stored, and every stored source is named by a row.
fn sources_consistent(r: &Registry) -> (i64, i64) {
    const USED: &str = "SELECT source_digest FROM tools WHERE source_digest IS NOT NULL
        UNION SELECT source_digest FROM tool_versions WHERE source_digest IS NOT NULL
        UNION SELECT source_digest FROM reviews WHERE source_digest IS NOT NULL
        UNION SELECT source_digest FROM rejected_candidates WHERE source_digest IS NOT NULL";
    let count = |sql: String| {
        r.read(|db| db.query_opt(&sql, &[], |row| row.get::<i64>(0)))
            .unwrap()
            .unwrap()
    };
    (
        count(format!(
            "SELECT count(*) FROM sources WHERE digest NOT IN ({USED})"
        )),
        count(format!(
            "SELECT count(*) FROM ({USED}) u WHERE source_digest NOT IN (SELECT digest FROM sources)"
        )),
    )
}

#[test]
fn racing_writer_processes_apply_each_version_once_with_a_gap_free_registry_version() {
    each_backend(|r, at, backend| {
        let children: Vec<_> = (0..WRITERS).map(|id| spawn("race", at, id, None)).collect();
        let mut conflicts = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{backend}: a writer failed: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // libtest prints the test's name on the same line, before the writer's own output.
            let line = stdout
                .split_once("writer-result ")
                .and_then(|(_, rest)| rest.lines().next())
                .unwrap_or_else(|| panic!("{backend}: no result in {stdout}"));
            assert!(line.starts_with(&format!("applied={APPLIES} ")), "{line}");
            conflicts += line
                .rsplit_once("conflicts=")
                .and_then(|(_, n)| n.parse::<usize>().ok())
                .unwrap();
        }
        let committed = (1 + WRITERS * APPLIES) as i64;
        // One bump per committed apply, none for a lost compare-and-swap.
        assert_eq!(r.registry_version().unwrap(), committed, "{backend}");
        let tool = r.tool(WATCH).unwrap().unwrap();
        assert_eq!(
            tool.version, committed,
            "{backend}: one tool version per apply"
        );
        assert_eq!(tool.registry_version, committed, "{backend}");
        let history: Vec<(i64, i64)> = r
            .history(WATCH)
            .unwrap()
            .iter()
            .map(|h| (h.version, h.registry_version))
            .collect();
        assert_eq!(
            history,
            vec![(committed, committed), (committed - 1, committed - 1)],
            "{backend}: the retained versions, each at its own registry version"
        );
        assert_eq!(
            sources_consistent(r),
            (0, 0),
            "{backend}: (sources no row names, digests with no source)"
        );
        // Several writers on one base: some lost their compare-and-swap and read again.
        eprintln!("{backend}: {conflicts} lost compare-and-swaps among {WRITERS} writers");
    });
}

#[test]
fn a_writer_killed_inside_its_transaction_leaves_nothing_half_written() {
    each_backend(|r, at, backend| {
        // Dies after writing the snapshot, the watch state and the event, before COMMIT.
        for failpoint in ["apply.after_snapshot=abort", "apply.after_state=abort"] {
            let before_version = r.registry_version().unwrap();
            let before_events = r.event_sequence().unwrap();
            let before = r.tool(WATCH).unwrap().unwrap();
            let out = spawn("abort", at, 1, Some(failpoint))
                .wait_with_output()
                .unwrap();
            assert!(
                !out.status.success(),
                "{backend}/{failpoint}: the writer was not killed"
            );
            // Another writer goes on at once (no lock left behind) and sees nothing of it.
            assert_eq!(
                r.registry_version().unwrap(),
                before_version,
                "{backend}/{failpoint}"
            );
            assert_eq!(
                r.event_sequence().unwrap(),
                before_events,
                "{backend}/{failpoint}"
            );
            let after = r.tool(WATCH).unwrap().unwrap();
            assert_eq!(
                (after.version, &after.fingerprint),
                (before.version, &before.fingerprint),
                "{backend}/{failpoint}"
            );
            assert_eq!(sources_consistent(r), (0, 0), "{backend}/{failpoint}");
            assert_eq!(
                apply_next(r, 7).unwrap(),
                before_version + 1,
                "{backend}/{failpoint}: the next apply takes the next version"
            );
        }
    });
}
