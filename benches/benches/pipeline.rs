//! Parse + normalize + fingerprint the corpus' largest OpenAPI documents, and a whole `diff` of
//! the GitHub REST pair, against the floor measured in the same run: parsing both documents
//! with serde_json and hashing their bytes. `github-positions`: the GitHub REST
//! 2020-07-30 → 2021-03-08 diff without and with source positions.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schemawatch::core::diff::classify;
use schemawatch::core::fingerprint::tool_fingerprint;
use schemawatch::core::model::Kind;
use schemawatch::core::normalize::openapi;
use schemawatch::core::normalize::source::locate_changes;
use sha2::{Digest, Sha256};
use std::hint::black_box;

#[path = "../../tests/common/corpus.rs"]
mod vendored;

fn corpus(rel: &str) -> Vec<u8> {
    vendored::read(&format!("openapi/{rel}"))
}

fn normalize_and_fingerprint(c: &mut Criterion) {
    let mut group = c.benchmark_group("normalize+fingerprint");
    group.sample_size(20);
    for rel in [
        "stripe/v2022-03-02.json",
        "github-rest/v2021-10-10.json",
        "discord-3.1/v2025-05-09.json",
        "docker-engine-swagger2/v1.44.yaml",
    ] {
        let bytes = corpus(rel);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(rel, |b| {
            b.iter(|| {
                let spec = openapi::normalize("bench.doc", black_box(&bytes)).expect("normalizes");
                black_box(tool_fingerprint(&spec))
            })
        });
    }
    group.finish();
}

fn diff_vs_floor(c: &mut Criterion) {
    for (label, old_rel, new_rel) in [
        (
            "github-pair",
            "github-rest/v2021-03-08.json",
            "github-rest/v2021-10-10.json",
        ),
        (
            "stripe-pair",
            "stripe/v2021-11-01.json",
            "stripe/v2022-03-02.json",
        ),
    ] {
        let old = corpus(old_rel);
        let new = corpus(new_rel);
        let mut group = c.benchmark_group(label);
        group.sample_size(20);
        group.bench_function("floor: serde_json parse both + sha256 bytes", |b| {
            b.iter(|| {
                let a: serde_json::Value = serde_json::from_slice(black_box(&old)).expect("json");
                let z: serde_json::Value = serde_json::from_slice(black_box(&new)).expect("json");
                black_box((a, z, Sha256::digest(&old), Sha256::digest(&new)))
            })
        });
        group.bench_function("diff: normalize both + classify", |b| {
            b.iter(|| {
                let a = openapi::normalize("bench.doc", black_box(&old)).expect("normalizes");
                let z = openapi::normalize("bench.doc", black_box(&new)).expect("normalizes");
                black_box(classify(&a, &z, &Default::default()))
            })
        });
        group.finish();
    }
}

/// The GitHub REST 2020-07-30 → 2021-03-08 diff without and with source positions (every
/// change located in the new document's text, as `diff --format sarif|github` does), in one
/// group so both are measured under the same load.
fn diff_with_positions(c: &mut Criterion) {
    let old = corpus("github-rest/v2020-07-30.json");
    let new = corpus("github-rest/v2021-03-08.json");
    let mut group = c.benchmark_group("github-positions");
    group.sample_size(10);
    group.bench_function("diff: normalize both + classify", |b| {
        b.iter(|| {
            let a = openapi::normalize("bench.doc", black_box(&old)).expect("normalizes");
            let z = openapi::normalize("bench.doc", black_box(&new)).expect("normalizes");
            black_box(classify(&a, &z, &Default::default()))
        })
    });
    group.bench_function("diff + positions: ... + locate every change", |b| {
        b.iter(|| {
            let a = openapi::normalize("bench.doc", black_box(&old)).expect("normalizes");
            let z = openapi::normalize("bench.doc", black_box(&new)).expect("normalizes");
            let report = classify(&a, &z, &Default::default());
            let located = locate_changes(Kind::Openapi, black_box(&new), &report.changes);
            black_box((report, located))
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    normalize_and_fingerprint,
    diff_vs_floor,
    diff_with_positions
);
criterion_main!(benches);
