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

#[path = "../../tests/common/corpus.rs"]
mod corpus;

/// The largest document (uncompressed size) the normalizer accepts, and the one before it (by
/// name) in its folder, as corpus-relative names.
fn pick(kind: Kind, dir: &str) -> Option<(String, Option<String>)> {
    let accepts = |rel: &String| normalize(kind, "bench.doc", &corpus::read(rel)).is_ok();
    let mut all: Vec<(usize, String)> = corpus::files_under(dir)
        .into_iter()
        .filter(|rel| !rel.ends_with(".md"))
        .map(|rel| (corpus::read(&rel).len(), rel))
        .collect();
    all.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
    let largest = all.into_iter().map(|(_, rel)| rel).find(accepts)?;
    let folder = largest.rsplit_once('/')?.0.to_string();
    let siblings = corpus::files_under(&folder);
    let i = siblings.iter().position(|p| p == &largest)?;
    let before = siblings[..i].iter().rev().find(|rel| accepts(rel)).cloned();
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
        let new = corpus::read(&largest);
        let rel = &largest;
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
            let old = corpus::read(&before);
            eprintln!("{dir}: diff pair {before} -> {rel}");
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
