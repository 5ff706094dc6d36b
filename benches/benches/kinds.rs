//! Per kind, on the corpus' largest document that the kind's normalizer accepts: normalize +
//! fingerprint, and a whole diff (normalize both + classify) against the version before it in
//! the same corpus folder, each next to the floor measured in the same run: serde_json parse
//! (JSON documents; XML and GraphQL SDL cannot be parsed by serde_json, so their floor is the
//! hash alone) + sha256 of the bytes. `scripts/bench-ratios` prints the ratios.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schemawatch::core::diff::classify;
use schemawatch::core::fingerprint::tool_fingerprint;
use schemawatch::core::model::Kind;
use schemawatch::core::normalize::normalize;
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::path::{Path, PathBuf};

fn corpus_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_none_or(|x| x != "md") {
            out.push(p);
        }
    }
}

/// The largest document the normalizer accepts, and the one before it (by name) in its folder.
fn pick(kind: Kind, dir: &str) -> Option<(PathBuf, Option<PathBuf>)> {
    let mut all = Vec::new();
    files(&corpus_root().join(dir), &mut all);
    all.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)));
    let largest = all
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| normalize(kind, "bench.doc", &b).is_ok()))?;
    let mut siblings = Vec::new();
    files(largest.parent()?, &mut siblings);
    siblings.sort();
    let i = siblings.iter().position(|p| p == &largest)?;
    let before = siblings[..i]
        .iter()
        .rev()
        .find(|p| std::fs::read(p).is_ok_and(|b| normalize(kind, "bench.doc", &b).is_ok()))
        .cloned();
    Some((largest, before))
}

fn floor(bytes: &[u8]) -> impl Sized {
    let parsed = serde_json::from_slice::<serde_json::Value>(bytes).ok();
    (parsed, Sha256::digest(bytes))
}

const KINDS: &[(Kind, &str)] = &[
    (Kind::Openapi, "openapi"),
    (Kind::Openrpc, "openrpc"),
    (Kind::Odata, "odata"),
    (Kind::Graphql, "graphql"),
    (Kind::Mcp, "mcp"),
    (Kind::Optimade, "optimade"),
];

fn per_kind(c: &mut Criterion) {
    for (kind, dir) in KINDS {
        let Some((largest, before)) = pick(*kind, dir) else {
            eprintln!("{dir}: no document normalizes; skipped");
            continue;
        };
        let new = std::fs::read(&largest).expect("read");
        let rel = largest
            .strip_prefix(corpus_root())
            .unwrap_or(&largest)
            .display()
            .to_string();
        let mut group = c.benchmark_group(format!("kind-{dir}"));
        group.sample_size(10);
        group.throughput(Throughput::Bytes(new.len() as u64));
        eprintln!("{dir}: largest {rel} ({} bytes)", new.len());
        group.bench_function("floor: parse + sha256", |b| {
            b.iter(|| black_box(floor(black_box(&new))))
        });
        group.bench_function("normalize+fingerprint", |b| {
            b.iter(|| {
                let spec = normalize(*kind, "bench.doc", black_box(&new)).expect("normalizes");
                black_box(tool_fingerprint(&spec))
            })
        });
        if let Some(before) = before {
            let old = std::fs::read(&before).expect("read");
            eprintln!(
                "{dir}: diff pair {} -> {rel}",
                before
                    .strip_prefix(corpus_root())
                    .unwrap_or(&before)
                    .display()
            );
            group.bench_function("diff floor: parse both + sha256 both", |b| {
                b.iter(|| black_box((floor(black_box(&old)), floor(black_box(&new)))))
            });
            group.bench_function("diff: normalize both + classify", |b| {
                b.iter(|| {
                    let a = normalize(*kind, "bench.doc", black_box(&old)).expect("normalizes");
                    let z = normalize(*kind, "bench.doc", black_box(&new)).expect("normalizes");
                    black_box(classify(&a, &z, &Default::default()))
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, per_kind);
criterion_main!(benches);
