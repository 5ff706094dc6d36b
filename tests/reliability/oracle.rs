//! The invariant oracle of the reliability suite (docs/reliability.md, notes I1–I6), shared by
//! every module of the reliability test crate. It reads the registry file directly with rusqlite
//! (after any crash: opening it runs WAL recovery) and returns every violation it finds, so a
//! scenario can assert `violations.is_empty()` and print all of them at once.
//!
//! - I1 registry versions: every stored version lies in `1..=head`, distinct; per tool the
//!   versions are contiguous and their registry versions strictly increasing; the `tools` row
//!   is the newest history row. With `contiguous`, the stored registry versions are exactly
//!   `1..=head` (no version bumped without its row, none lost).
//! - I2 acknowledged writes: every `(tool, fingerprint)` a finished run reported as
//!   registered/applied is in the history.
//! - I3 no snapshot from a failed fetch: `assert_untouched(before, after)`.
//! - I4 atomicity: a breaking/security version carries the accepted review it came from; an
//!   open review's watch has its state row, and a `pending_review` watch has a review.
//! - I5 `PRAGMA integrity_check` = ok, and the durability pragmas hold.
//! - I7 events: every committed contract change (a history row) has exactly one event
//!   (`registered`, `applied`, `review_accepted` or `projection_upgrade` at its registry
//!   version) and every queued review exactly one `pending_review`; no such event lacks its
//!   change; event sequences are gap-free up to the stored high-water mark, and every
//!   delivery names an event.
//! - I6 the credential canary (raw, base64, percent-encoded, hex) is in no registry file
//!   (db, -wal, -shm) and none of the extra texts (logs, API and CLI output).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// One row of `tool_versions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRow {
    pub tool: String,
    pub version: i64,
    pub registry_version: i64,
    pub fingerprint: String,
    pub compatibility: Option<String>,
    pub review_id: Option<i64>,
}

/// One row of `reviews`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewRow {
    pub id: i64,
    pub watch: String,
    pub state: String,
    pub compatibility: String,
    pub base_registry_version: i64,
    pub candidate_fingerprint: String,
}

/// Everything the oracle reads, for scenario-specific assertions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub head: i64,
    /// `tools`: name → (version, registry_version, fingerprint).
    pub tools: BTreeMap<String, (i64, i64, String)>,
    pub versions: Vec<VersionRow>,
    pub reviews: Vec<ReviewRow>,
    /// `watch_state`: watch → status.
    pub watch_status: BTreeMap<String, String>,
}

impl Facts {
    pub fn open_reviews(&self) -> usize {
        self.reviews.iter().filter(|r| r.state == "open").count()
    }
}

/// What a scenario expects beyond the universal invariants.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// No `forget` and no pruning: stored registry versions are exactly `1..=head`.
    pub contiguous: bool,
    /// Acknowledged writes: (tool, fingerprint).
    pub acked: Vec<(String, String)>,
    /// Texts that must not contain the canary (captured logs, CLI output, API bodies).
    pub texts: Vec<(String, Vec<u8>)>,
}

fn open(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    Ok(conn)
}

/// Reads the registry's facts (no invariant checks).
pub fn read_facts(db: &Path) -> rusqlite::Result<Facts> {
    let conn = open(db)?;
    read_facts_from(&conn)
}

fn read_facts_from(conn: &Connection) -> rusqlite::Result<Facts> {
    let head: i64 = conn.query_row(
        "SELECT registry_version FROM registry_head WHERE id = 1",
        [],
        |r| r.get(0),
    )?;
    let mut tools = BTreeMap::new();
    let mut stmt =
        conn.prepare("SELECT name, version, registry_version, fingerprint FROM tools")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?)))
    })?;
    for row in rows {
        let (k, v) = row?;
        tools.insert(k, v);
    }
    let mut stmt = conn.prepare(
        "SELECT tool, version, registry_version, fingerprint, compatibility, review_id
         FROM tool_versions ORDER BY tool, version",
    )?;
    let versions = stmt
        .query_map([], |r| {
            Ok(VersionRow {
                tool: r.get(0)?,
                version: r.get(1)?,
                registry_version: r.get(2)?,
                fingerprint: r.get(3)?,
                compatibility: r.get(4)?,
                review_id: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut stmt = conn.prepare(
        "SELECT id, watch, state, compatibility, base_registry_version, candidate_fingerprint
         FROM reviews ORDER BY id",
    )?;
    let reviews = stmt
        .query_map([], |r| {
            Ok(ReviewRow {
                id: r.get(0)?,
                watch: r.get(1)?,
                state: r.get(2)?,
                compatibility: r.get(3)?,
                base_registry_version: r.get(4)?,
                candidate_fingerprint: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut watch_status = BTreeMap::new();
    let mut stmt = conn.prepare("SELECT watch, status FROM watch_state")?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
        let (k, v) = row?;
        watch_status.insert(k, v);
    }
    Ok(Facts {
        head,
        tools,
        versions,
        reviews,
        watch_status,
    })
}

/// Checks I1, I2, I4, I5 and I6 on the registry at `db`; returns the facts and every violation.
pub fn check(db: &Path, expect: &Expect) -> (Facts, Vec<String>) {
    let mut v = Vec::new();
    let conn = match open(db) {
        Ok(c) => c,
        Err(e) => {
            return (
                Facts::default(),
                vec![format!("I5: cannot open {db:?}: {e}")],
            )
        }
    };
    // I5
    match conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)) {
        Ok(s) if s == "ok" => {}
        Ok(s) => v.push(format!("I5: integrity_check = {s}")),
        Err(e) => v.push(format!("I5: integrity_check failed: {e}")),
    }
    match conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)) {
        Ok(m) if m.eq_ignore_ascii_case("wal") => {}
        other => v.push(format!("I5: journal_mode is {other:?}, not wal")),
    }
    let facts = match read_facts_from(&conn) {
        Ok(f) => f,
        Err(e) => {
            v.push(format!("I5: cannot read the registry: {e}"));
            return (Facts::default(), v);
        }
    };
    drop(conn);

    // I1
    let mut seen = BTreeSet::new();
    for row in &facts.versions {
        if row.registry_version < 1 || row.registry_version > facts.head {
            v.push(format!(
                "I1: {}@{} has registry_version {} outside 1..={}",
                row.tool, row.version, row.registry_version, facts.head
            ));
        }
        if !seen.insert(row.registry_version) {
            v.push(format!(
                "I1: registry_version {} stored twice",
                row.registry_version
            ));
        }
    }
    let mut by_tool: BTreeMap<&str, Vec<&VersionRow>> = BTreeMap::new();
    for row in &facts.versions {
        by_tool.entry(row.tool.as_str()).or_default().push(row);
    }
    for (tool, rows) in &by_tool {
        for pair in rows.windows(2) {
            if pair[1].version != pair[0].version + 1 {
                v.push(format!(
                    "I1: {tool} versions not contiguous: {} then {}",
                    pair[0].version, pair[1].version
                ));
            }
            if pair[1].registry_version <= pair[0].registry_version {
                v.push(format!(
                    "I1: {tool} registry versions not increasing: {} then {}",
                    pair[0].registry_version, pair[1].registry_version
                ));
            }
        }
        let newest = rows[rows.len() - 1];
        match facts.tools.get(*tool) {
            Some((version, rv, fp))
                if *version == newest.version
                    && *rv == newest.registry_version
                    && *fp == newest.fingerprint => {}
            other => v.push(format!(
                "I1: tools row of {tool} is {other:?}, newest history row is {newest:?}"
            )),
        }
    }
    for name in facts.tools.keys() {
        if !by_tool.contains_key(name.as_str()) {
            v.push(format!("I1: tool {name} has no history"));
        }
    }
    if expect.contiguous {
        let expected: BTreeSet<i64> = (1..=facts.head).collect();
        if seen != expected {
            let missing: Vec<_> = expected.difference(&seen).collect();
            let extra: Vec<_> = seen.difference(&expected).collect();
            v.push(format!(
                "I1: stored registry versions are not 1..={}: missing {missing:?}, extra {extra:?}",
                facts.head
            ));
        }
    }

    // I2
    for (tool, fp) in &expect.acked {
        if !facts
            .versions
            .iter()
            .any(|r| &r.tool == tool && &r.fingerprint == fp)
        {
            v.push(format!("I2: acknowledged write {tool} {fp} is lost"));
        }
    }

    // I4
    let reviews: BTreeMap<i64, &ReviewRow> = facts.reviews.iter().map(|r| (r.id, r)).collect();
    for row in &facts.versions {
        let gated = matches!(
            row.compatibility.as_deref(),
            Some("breaking") | Some("security_review")
        );
        if gated {
            match row.review_id.and_then(|id| reviews.get(&id)) {
                Some(r) if r.state == "accepted" && r.candidate_fingerprint == row.fingerprint => {}
                other => v.push(format!(
                    "I4: {} {}@{} committed without its accepted review (review {other:?})",
                    row.compatibility.as_deref().unwrap_or("?"),
                    row.tool,
                    row.version
                )),
            }
        }
    }
    let mut open_per_watch: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &facts.reviews {
        if !facts.watch_status.contains_key(&r.watch) {
            v.push(format!(
                "I4: review {} of {} committed without its watch state",
                r.id, r.watch
            ));
        }
        if r.base_registry_version > facts.head {
            v.push(format!(
                "I4: review {} is based on registry_version {} > head {}",
                r.id, r.base_registry_version, facts.head
            ));
        }
        if r.state == "open" {
            *open_per_watch.entry(r.watch.as_str()).or_default() += 1;
        }
        if r.state == "accepted" && !facts.versions.iter().any(|row| row.review_id == Some(r.id)) {
            v.push(format!(
                "I4: accepted review {} has no applied version",
                r.id
            ));
        }
    }
    for (watch, n) in open_per_watch {
        if n > 1 {
            v.push(format!("I4: {watch} has {n} open reviews"));
        }
    }
    for (watch, status) in &facts.watch_status {
        if status == "pending_review" && !facts.reviews.iter().any(|r| &r.watch == watch) {
            v.push(format!(
                "I4: {watch} is pending_review without a review row"
            ));
        }
    }

    // I7
    v.extend(event_violations(db, &facts));

    // I6
    for path in registry_files(db) {
        if let Ok(bytes) = std::fs::read(&path) {
            if let Some(form) = find_canary(&bytes) {
                v.push(format!("I6: canary ({form}) in {}", path.display()));
            }
        }
    }
    for (what, bytes) in &expect.texts {
        if let Some(form) = find_canary(bytes) {
            v.push(format!("I6: canary ({form}) in {what}"));
        }
    }
    (facts, v)
}

/// I7: events match the changes they report, one to one.
fn event_violations(db: &Path, facts: &Facts) -> Vec<String> {
    let mut v = Vec::new();
    let Ok(conn) = open(db) else {
        return v;
    };
    let rows: Vec<(i64, String, Option<String>, String)> = match conn
        .prepare("SELECT seq, event, watch, data_json FROM events ORDER BY seq")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        }) {
        Ok(rows) => rows,
        Err(e) => return vec![format!("I7: cannot read events: {e}")],
    };
    let high: i64 = conn
        .query_row("SELECT event_seq FROM registry_meta", [], |r| r.get(0))
        .unwrap_or(-1);
    let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let expected: Vec<i64> = (1..=high).collect();
    if seqs != expected {
        v.push(format!(
            "I7: event sequences {seqs:?} are not 1..={high} (nothing is pruned in these runs)"
        ));
    }
    let mut contract_events: BTreeMap<(String, i64), usize> = BTreeMap::new();
    let mut review_events: BTreeMap<i64, usize> = BTreeMap::new();
    for (seq, event, watch, json) in &rows {
        let data: serde_json::Value = match serde_json::from_str(json) {
            Ok(d) => d,
            Err(e) => {
                v.push(format!("I7: event {seq} has unreadable data: {e}"));
                continue;
            }
        };
        let watch = watch.clone().unwrap_or_default();
        match event.as_str() {
            "registered" | "applied" | "review_accepted" | "projection_upgrade" => {
                let Some(rv) = data["registry_version"].as_i64() else {
                    v.push(format!("I7: {event} event {seq} without registry_version"));
                    continue;
                };
                *contract_events.entry((watch.clone(), rv)).or_default() += 1;
                if event != "projection_upgrade"
                    && !facts
                        .versions
                        .iter()
                        .any(|r| r.tool == watch && r.registry_version == rv)
                {
                    v.push(format!(
                        "I7: {event} event {seq} of {watch} at registry_version {rv} has no committed change"
                    ));
                }
            }
            "pending_review" => match data["review_id"].as_i64() {
                Some(id) => {
                    *review_events.entry(id).or_default() += 1;
                    if !facts.reviews.iter().any(|r| r.id == id) {
                        v.push(format!(
                            "I7: pending_review event {seq} names no review ({id})"
                        ));
                    }
                }
                None => v.push(format!("I7: pending_review event {seq} without review_id")),
            },
            _ => {}
        }
    }
    for row in &facts.versions {
        let n = contract_events
            .get(&(row.tool.clone(), row.registry_version))
            .copied()
            .unwrap_or(0);
        if n != 1 {
            v.push(format!(
                "I7: {}@{} (registry_version {}) has {n} events",
                row.tool, row.version, row.registry_version
            ));
        }
    }
    for r in &facts.reviews {
        let n = review_events.get(&r.id).copied().unwrap_or(0);
        if n != 1 {
            v.push(format!(
                "I7: review {} of {} has {n} pending_review events",
                r.id, r.watch
            ));
        }
    }
    let orphans: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = d.event_seq)",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    if orphans > 0 {
        v.push(format!("I7: {orphans} deliveries name no event"));
    }
    v
}

/// Panics with every violation.
pub fn assert_invariants(db: &Path, expect: &Expect) -> Facts {
    let (facts, violations) = check(db, expect);
    assert!(
        violations.is_empty(),
        "invariant violations in {}:\n  {}\nfacts: {facts:#?}",
        db.display(),
        violations.join("\n  ")
    );
    facts
}

/// I3: nothing about contract state changed between two reads (a failed fetch wrote no
/// snapshot, queued no review and bumped no version).
pub fn assert_untouched(before: &Facts, after: &Facts, what: &str) {
    assert_eq!(before.head, after.head, "{what}: registry version moved");
    assert_eq!(before.tools, after.tools, "{what}: tools changed");
    assert_eq!(before.versions, after.versions, "{what}: history changed");
    assert_eq!(before.reviews, after.reviews, "{what}: reviews changed");
}

/// The registry file and its WAL and shared-memory companions.
pub fn registry_files(db: &Path) -> Vec<PathBuf> {
    let mut out = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut s = db.as_os_str().to_owned();
        s.push(suffix);
        out.push(PathBuf::from(s));
    }
    out
}

// ---------------------------------------------------------------------------------------
// The canary (same value and encodings as tests/common, self-contained here)
// ---------------------------------------------------------------------------------------

pub const CANARY: &str = "canary-5e1f0c3a9b";
pub const TOKEN_VAR: &str = "SW_TEST_TOKEN";

/// The canary scanner is shared with the other integration tests (tests/common).
pub fn find_canary(haystack: &[u8]) -> Option<String> {
    crate::common::find_secret(haystack, CANARY)
}

// ---------------------------------------------------------------------------------------
// Small deterministic randomness (no extra dependency): xorshift64*, seeded from
// SCHEMAWATCH_SEED when set so a failing run can be replayed.
// ---------------------------------------------------------------------------------------

pub struct Rng(u64);

impl Rng {
    pub fn from_env() -> (Rng, u64) {
        let seed = std::env::var("SCHEMAWATCH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0x9e37_79b9)
            });
        (Rng(seed.max(1)), seed)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Environment knob for the iteration count of a loop (CI default, long-tier override).
pub fn iterations(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// True when tests that need a real peer must fail rather than skip.
pub fn peers_required() -> bool {
    std::env::var("SCHEMAWATCH_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}
