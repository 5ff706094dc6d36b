//! Crash safety (matrix C1, C2, C8): the real `schemawatch` binary, several `check` and
//! `pending accept` processes racing on one SQLite registry, killed with SIGKILL at random
//! points; after every kill the invariant oracle (tests/reliability/oracle.rs) must hold:
//! integrity_check ok, registry versions contiguous, every acknowledged write present,
//! no breaking version without its accepted review, no canary anywhere.
//!
//! CI runs `SCHEMAWATCH_KILL_ITERATIONS` (default 30) iterations; the long tier is
//! `cargo test --test reliability crash:: -- --ignored` (default 300, override with the
//! variable). `SCHEMAWATCH_SEED` replays a run (the seed is printed).

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::oracle;
use schemawatch::core::fingerprint::tool_fingerprint;
use schemawatch::core::model::Kind;
use schemawatch::core::normalize::normalize;
use serde_json::{json, Value};

const WATCHES: [&str; 3] = ["crash.one", "crash.two", "crash.three"];

fn config(url: &str) -> String {
    let mut c = String::from("[storage]\npath = \"registry.sqlite3\"\nkeep_versions = 1000000\n");
    for w in WATCHES {
        c.push_str(&format!(
            "\n[[watch]]\nname = \"{w}\"\nkind = \"openapi\"\nurl = \"{url}\"\ntimeout = \"5s\"\n\n[watch.schema_headers]\nAuthorization = \"Bearer ${{{}}}\"\n",
            oracle::TOKEN_VAR
        ));
    }
    c
}

/// Document of iteration `i`: the petstore plus `i` optional query parameters (each step is a
/// compatible change, so every iteration has writes); every fourth iteration also drops an
/// endpoint (breaking, so it queues a review instead).
fn document(i: usize) -> Vec<u8> {
    let mut doc = common::Pets {
        show_by_id: i % 4 != 3,
        ..common::Pets::v1()
    }
    .json();
    let params = doc["paths"]["/pets"]["get"]["parameters"]
        .as_array_mut()
        .expect("parameters");
    // Bounded size: every 60 iterations the parameters start over (a breaking change).
    for k in 0..(i % 60) {
        params.push(
            json!({"name": format!("extra{k}"), "in": "query", "required": false,
            "schema": {"type": "string"}}),
        );
    }
    serde_json::to_vec(&doc).expect("serialize")
}

fn fingerprint(watch: &str, bytes: &[u8]) -> String {
    let spec = normalize(Kind::Openapi, watch, bytes).expect("document normalizes");
    tool_fingerprint(&spec)
}

struct Racer {
    child: Child,
    is_check: bool,
}

fn spawn(sb: &common::Sandbox, args: &[&str]) -> Child {
    sb.command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn schemawatch")
}

struct Tally {
    iterations: usize,
    killed: usize,
    finished: usize,
    acked: usize,
}

fn kill_loop(iterations: usize, writers: usize) -> Tally {
    let (mut rng, seed) = oracle::Rng::from_env();
    eprintln!("kill loop: {iterations} iterations, {writers} writers, SCHEMAWATCH_SEED={seed}");
    let server = common::DocServer::start(document(0));
    let sb = common::Sandbox::new();
    sb.write_config(&config(&server.url()));
    let db = sb.path("registry.sqlite3");
    let cfg = sb.config_arg();

    // Sanity: the oracle's fingerprint is the binary's.
    let (run, _) = sb.check(&[]);
    run.assert_code(0);
    let status = sb.status();
    assert_eq!(
        status["watches"][0]["fingerprint"].as_str(),
        Some(fingerprint(WATCHES[0], &document(0)).as_str()),
        "oracle fingerprint differs from the binary's: {status}"
    );

    let mut expect = oracle::Expect {
        contiguous: true,
        ..Default::default()
    };
    for w in WATCHES {
        expect
            .acked
            .push((w.to_string(), fingerprint(w, &document(0))));
    }
    let mut tally = Tally {
        iterations: 0,
        killed: 0,
        finished: 0,
        acked: 0,
    };
    let started = Instant::now();
    for i in 1..=iterations {
        let doc = document(i);
        server.set_document(doc.clone());
        let mut racers = Vec::new();
        for _ in 0..writers {
            let child = spawn(&sb, &["check", "--config", &cfg, "--json"]);
            racers.push(Racer {
                child,
                is_check: true,
            });
        }
        // Now and then a reviewer accepts whatever is open, racing the checks.
        if rng.below(3) == 0 {
            let facts = oracle::read_facts(&db).expect("read registry");
            if let Some(r) = facts.reviews.iter().find(|r| r.state == "open") {
                let id = r.id.to_string();
                let child = spawn(
                    &sb,
                    &[
                        "pending",
                        "accept",
                        &id,
                        "--config",
                        &cfg,
                        "--reviewer",
                        "crash-bot",
                        "--reason",
                        "kill loop",
                    ],
                );
                racers.push(Racer {
                    child,
                    is_check: false,
                });
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(120)));
        // Kill a random non-empty subset.
        let mask = 1 + rng.below((1u64 << racers.len()) - 1);
        for (k, r) in racers.iter_mut().enumerate() {
            if mask & (1 << k) != 0 && r.child.kill().is_ok() {
                tally.killed += 1;
            }
        }
        for r in racers {
            let is_check = r.is_check;
            let out = r.child.wait_with_output().expect("wait");
            expect.texts.push((
                format!("iteration {i} output"),
                [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
            ));
            let Some(code) = out.status.code() else {
                continue; // killed: its writes are indeterminate
            };
            tally.finished += 1;
            if !is_check || code > 1 {
                continue;
            }
            // A finished check acknowledges each registered/applied outcome.
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "iteration {i}: check exited {code} without JSON ({e}): {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            for o in v["outcomes"].as_array().into_iter().flatten() {
                let action = o["action"].as_str().unwrap_or("");
                if action == "registered" || action == "applied" {
                    let w = o["watch"].as_str().unwrap_or("").to_string();
                    expect.acked.push((w.clone(), fingerprint(&w, &doc)));
                    tally.acked += 1;
                }
            }
        }
        let (_, violations) = oracle::check(&db, &expect);
        assert!(
            violations.is_empty(),
            "SCHEMAWATCH_SEED={seed} iteration {i}: invariant violations:\n  {}",
            violations.join("\n  ")
        );
        // Keep the transcript bounded: its canary scan is done, drop it.
        expect.texts.clear();
        tally.iterations += 1;
    }
    // After the storm, the binary itself opens the registry (quick_check) and a clean check
    // succeeds.
    let (run, _) = sb.check(&[]);
    assert!(run.code <= 1, "{}", run.describe());
    let facts = oracle::assert_invariants(&db, &expect);
    eprintln!(
        "kill loop done in {:?}: {} iterations, {} processes killed, {} finished, {} acknowledged writes, head {}, 0 violations",
        started.elapsed(),
        tally.iterations,
        tally.killed,
        tally.finished,
        tally.acked,
        facts.head
    );
    tally
}

#[test]
fn kill9_racing_writers_ci_tier() {
    let n = oracle::iterations("SCHEMAWATCH_KILL_ITERATIONS", 30);
    let t = kill_loop(n, 3);
    assert_eq!(t.iterations, n);
    assert!(t.killed >= n, "every iteration kills at least one process");
}

#[test]
#[ignore = "long tier: cargo test --test reliability crash:: -- --ignored"]
fn kill9_racing_writers_long_tier() {
    let n = oracle::iterations("SCHEMAWATCH_KILL_ITERATIONS", 300);
    kill_loop(n, 3);
}

// ---------------------------------------------------------------------------------------
// Failpoints (C2): every step of the write path × {abort, panic, error}
// ---------------------------------------------------------------------------------------

fn run_with_failpoint(sb: &common::Sandbox, args: &[&str], fp: &str) -> std::process::Output {
    sb.command(args)
        .env("SCHEMAWATCH_FAILPOINT", fp)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run schemawatch")
}

/// One failpoint, one action: prepare the registry so the next command reaches the point, run
/// it with the failpoint armed, check the invariants and that nothing was half-written, then
/// run it again without the failpoint and check that the registry converges.
fn failpoint_case(name: &str, action: &str) {
    let what = format!("failpoint {name}={action}");
    let server = common::DocServer::start(document(0));
    let sb = common::Sandbox::new();
    sb.write_config(&config(&server.url()));
    let db = sb.path("registry.sqlite3");
    let cfg = sb.config_arg();
    let stage = name.split('.').next().unwrap_or("");
    let mut expect = oracle::Expect {
        contiguous: true,
        ..Default::default()
    };
    let w = WATCHES[0];
    let check_args = ["check", "--config", cfg.as_str(), "--json", "--watch", w];
    // Registration itself (apply with no base) is covered by apply.* on a fresh registry.
    let fresh = name.starts_with("apply.") && action == "abort";
    if !fresh {
        sb.run(&check_args).assert_code(0);
        expect.acked.push((w.into(), fingerprint(w, &document(0))));
    }
    let target_doc = match stage {
        "apply" if fresh => document(0),
        "apply" => document(1),
        "review" | "accept" => document(3),
        _ => document(0), // unchanged: same document, the server answers 304
    };
    server.set_document(target_doc.clone());
    let mut args: Vec<String> = check_args.iter().map(|s| s.to_string()).collect();
    if stage == "accept" {
        sb.run(&check_args).assert_code(0);
        let facts = oracle::read_facts(&db).expect("facts");
        let id = facts
            .reviews
            .iter()
            .find(|r| r.state == "open")
            .map(|r| r.id.to_string())
            .unwrap_or_else(|| panic!("{what}: no open review to accept: {facts:?}"));
        args = [
            "pending",
            "accept",
            &id,
            "--config",
            &cfg,
            "--reviewer",
            "fp",
            "--reason",
            "fp",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let before = oracle::read_facts(&db).unwrap_or_default();
    let out = run_with_failpoint(&sb, &argv, &format!("{name}={action}"));
    expect.texts.push((
        format!("{what} output"),
        [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
    ));
    match action {
        "abort" => assert!(
            out.status.code().is_none(),
            "{what}: did not abort: {out:?}"
        ),
        "panic" => assert_eq!(out.status.code(), Some(101), "{what}: {out:?}"),
        // `check` reports a failed watch (1); `pending accept` a failed decision (1 or 2).
        _ => assert!(
            matches!(out.status.code(), Some(1) | Some(2)),
            "{what}: {out:?}"
        ),
    }
    let (after, violations) = oracle::check(&db, &expect);
    assert!(violations.is_empty(), "{what}: {}", violations.join("\n  "));
    if !name.ends_with("after_commit") {
        // Before COMMIT: all or nothing, and here it is nothing.
        oracle::assert_untouched(&before, &after, &what);
    }
    // Recovery: the same command without the failpoint converges.
    let out = sb.command(&argv).output().expect("rerun");
    expect.texts.push((
        format!("{what} rerun"),
        [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
    ));
    let code = out.status.code();
    if stage == "accept" {
        // Already accepted when the failpoint fired after COMMIT: superseded, exit 1.
        assert!(
            code == Some(0) || name.ends_with("after_commit"),
            "{what} rerun: {out:?}"
        );
    } else {
        assert_eq!(code, Some(0), "{what} rerun: {out:?}");
    }
    let facts = oracle::assert_invariants(&db, &expect);
    let current = facts.tools.get(w).map(|t| t.2.clone());
    match stage {
        "apply" | "unchanged" => assert_eq!(
            current,
            Some(fingerprint(w, &target_doc)),
            "{what}: the registry did not converge"
        ),
        "review" => assert_eq!(facts.open_reviews(), 1, "{what}: {facts:?}"),
        _ => assert!(
            facts.reviews.iter().any(|r| r.state == "accepted"),
            "{what}: {facts:?}"
        ),
    }
}

#[test]
fn failpoints_on_every_write_step() {
    if !cfg!(debug_assertions) {
        eprintln!("failpoints are compiled into debug builds only; skipped");
        return;
    }
    let mut cases = 0;
    for name in schemawatch::registry::failpoint::NAMES {
        for action in ["abort", "panic", "error"] {
            failpoint_case(name, action);
            cases += 1;
        }
    }
    eprintln!("failpoints: {cases} cases, 0 invariant violations");
}

/// C12: the daemon group-commits 304 bookkeeping (`last_checked_at`, at most once a second);
/// a kill -9 loses at most that last second of it, and nothing else: every watch still has
/// its contract and state, and its stored `last_checked_at` is no older than its last
/// refresh before the kill by more than the flush period (plus the interval and a second
/// of timestamp rounding).
#[test]
fn kill9_daemon_loses_at_most_a_second_of_bookkeeping() {
    let server = common::DocServer::start(document(0));
    let sb = common::Sandbox::new();
    let mut text = String::from(
        "[storage]\npath = \"registry.sqlite3\"\n\n[server]\nlisten = \"127.0.0.1:0\"\n",
    );
    for w in WATCHES {
        text.push_str(&format!(
            "\n[[watch]]\nname = \"{w}\"\nkind = \"openapi\"\nurl = \"{}\"\ninterval = \"1s\"\n",
            server.url()
        ));
    }
    sb.write_config(&text);
    let db = sb.path("registry.sqlite3");
    let mut child = sb
        .command(&["run", "--config", &sb.config_arg()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn run");
    // Long enough that bookkeeping never flushed would be visibly old (registration time).
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.counters().not_modified < 6 * WATCHES.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let killed_at = std::time::SystemTime::now();
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert!(
        server.counters().not_modified >= 6 * WATCHES.len(),
        "the daemon never settled into 304s"
    );
    let expect = oracle::Expect {
        acked: WATCHES
            .iter()
            .map(|w| (w.to_string(), fingerprint(w, &document(0))))
            .collect(),
        ..Default::default()
    };
    oracle::assert_invariants(&db, &expect);
    let conn = rusqlite::Connection::open(&db).expect("open registry");
    for w in WATCHES {
        let (status, checked): (String, String) = conn
            .query_row(
                "SELECT status, last_checked_at FROM watch_state WHERE watch = ?1",
                [w],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("watch state");
        assert_eq!(status, "unchanged", "{w}");
        let checked = humantime::parse_rfc3339(&checked).expect("rfc3339");
        let age = killed_at.duration_since(checked).unwrap_or_default();
        // interval (1.1 s) + flush period (1 s) + rounding to seconds (1 s) + scheduling slack.
        assert!(
            age <= Duration::from_secs(5),
            "{w}: last_checked_at {age:?} before the kill"
        );
    }
}
