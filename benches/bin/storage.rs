//! Compare-and-swap applies per second on each registry backend, in one run (issue 33):
//! `scripts/storage-bench` runs it against a SQLite file and a private PostgreSQL cluster on
//! 127.0.0.1 and prints the two side by side.
//!
//! Each apply is what a refresh that found a compatible change does: read the accepted
//! contract (its fingerprint check included), then compare-and-swap the next one in with its
//! watch state and stored source, in one write transaction. Two documents alternate (each
//! stored once, released when its last version is pruned: `KEEP` versions kept).
//!
//! It prints one JSON line per backend: applies, wall seconds, applies per second, and the
//! CPU per apply of this process and (PostgreSQL, with `--postmaster-pid`) of the server's
//! processes (the sum over the postmaster's children, from /proc).
//!
//!     cargo build --release -p schemawatch-benches --bin storage
//!     PGPASSFILE=... target/release/storage --sqlite /tmp/r.sqlite3 \
//!         --postgres postgresql://schemawatch@127.0.0.1:5432/bench --ca ca.crt \
//!         --postmaster-pid DIR/data/postmaster.pid --applies 2000

use schemawatch::core::model::Kind;
use schemawatch::registry::pg::PgOptions;
use schemawatch::registry::{
    CasBase, Location, PgPassword, Provenance, Registry, StoredSource, WatchState, WatchStatus,
};
use std::path::PathBuf;
use std::time::Instant;

const WATCH: &str = "bench.pets";
const KEEP: u32 = 10;
const WARMUP: usize = 50;

struct Args {
    sqlite: Option<PathBuf>,
    postgres: Option<String>,
    ca: Option<PathBuf>,
    postmaster_pid: Option<PathBuf>,
    applies: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sqlite: None,
        postgres: None,
        ca: None,
        postmaster_pid: None,
        applies: 1000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sqlite" => args.sqlite = Some(value.into()),
            "--postgres" => args.postgres = Some(value),
            "--ca" => args.ca = Some(value.into()),
            "--postmaster-pid" => args.postmaster_pid = Some(value.into()),
            "--applies" => args.applies = value.parse().map_err(|_| "--applies: a number")?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

/// An OpenAPI document of 20 operations; `variant` changes one bound (a compatible change).
fn doc(variant: usize) -> Vec<u8> {
    let mut paths = serde_json::Map::new();
    for i in 0..20 {
        paths.insert(
            format!("/things{i}/{{id}}"),
            serde_json::json!({"get": {
                "operationId": format!("getThing{i}"),
                "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "limit", "in": "query",
                     "schema": {"type": "integer", "maximum": 100 + variant}}
                ],
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"type": "object", "properties": {
                        "id": {"type": "string"}, "name": {"type": "string"},
                        "size": {"type": "integer"}}}}}}}
            }}),
        );
    }
    serde_json::to_vec(&serde_json::json!({
        "openapi": "3.0.3",
        "info": {"title": "bench", "version": "1"},
        "paths": paths,
    }))
    .unwrap_or_default()
}

/// CPU seconds (user + system) of process `pid` so far.
fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): state is field 3.
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    ticks / rustix::param::clock_ticks_per_second() as f64
}

/// CPU seconds of the postmaster's children (the server's backends and helpers) so far.
fn server_cpu(postmaster: &str) -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    let mut total = 0.0;
    for entry in dir.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_string));
        if ppid.as_deref() == Some(postmaster) || pid == postmaster {
            total += cpu_seconds(&pid);
        }
    }
    total
}

fn bench(name: &str, location: &Location, applies: usize, postmaster: Option<&str>) {
    let mut registry = match Registry::open_at(location, true) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(1);
        }
    };
    let docs: Vec<(schemawatch::core::model::ToolSpec, StoredSource)> = (0..2)
        .map(|v| {
            let bytes = doc(v);
            let spec = schemawatch::core::normalize::normalize(Kind::Openapi, WATCH, &bytes)
                .unwrap_or_else(|e| panic!("the bench document: {e}"));
            (spec, StoredSource::of(&bytes))
        })
        .collect();
    let state = WatchState {
        status: WatchStatus::Applied,
        ..WatchState::new(WATCH, Kind::Openapi)
    };
    let mut apply = |n: usize| {
        let base = registry
            .tool(WATCH)
            .unwrap_or_else(|e| panic!("{name}: read: {e}"))
            .map(|t| CasBase {
                registry_version: t.registry_version,
                fingerprint: t.fingerprint,
            });
        let (spec, source) = &docs[n % 2];
        registry
            .apply_with_state(
                spec,
                base.as_ref(),
                &Provenance::default(),
                KEEP,
                &state,
                None,
                source,
            )
            .unwrap_or_else(|e| panic!("{name}: apply: {e}"));
    };
    for n in 0..WARMUP {
        apply(n);
    }
    let me = std::process::id().to_string();
    let (cpu0, server0) = (cpu_seconds(&me), postmaster.map_or(0.0, server_cpu));
    let started = Instant::now();
    for n in 0..applies {
        apply(n);
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(&me) - cpu0;
    let server = postmaster.map(|p| server_cpu(p) - server0);
    println!(
        "{}",
        serde_json::json!({
            "backend": name,
            "applies": applies,
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "applies_per_second": (applies as f64 / seconds).round(),
            "client_cpu_us_per_apply": (cpu * 1e6 / applies as f64).round(),
            "server_cpu_us_per_apply": server.map(|s| (s * 1e6 / applies as f64).round()),
        })
    );
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("storage: {e}");
            std::process::exit(2);
        }
    };
    if let Some(path) = &args.sqlite {
        bench(
            "sqlite",
            &Location::Sqlite(path.clone()),
            args.applies,
            None,
        );
    }
    if let Some(url) = &args.postgres {
        let url = url::Url::parse(url).unwrap_or_else(|e| panic!("--postgres: {e}"));
        let location = Location::Postgres {
            url,
            options: PgOptions {
                ca_file: args.ca.clone(),
                ..PgOptions::default()
            },
            password: PgPassword::PassFile,
        };
        let postmaster = args.postmaster_pid.as_ref().and_then(|p| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.lines().next().map(str::to_string))
        });
        bench("postgresql", &location, args.applies, postmaster.as_deref());
    }
}
