//! The vendored schema corpus (`tests/corpus/`, sources and licenses in its MANIFEST.md).
//!
//! Documents over 64 KiB are stored gzip-compressed as `NAME.gz`; everything here speaks of
//! the uncompressed name (`openapi/stripe/v2022-03-02.json`), so callers never see the
//! storage form. Shared by the test crates and the benches (`#[path]`), so it uses only std
//! and flate2.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};

/// The corpus folder of this checkout (the benches' manifest lives one folder down).
pub fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let here = manifest.join("tests/corpus");
    if here.is_dir() {
        here
    } else {
        manifest.join("../tests/corpus")
    }
}

/// The uncompressed bytes of a corpus document, by its uncompressed relative name.
pub fn read(rel: &str) -> Vec<u8> {
    let plain = root().join(rel);
    if plain.is_file() {
        return std::fs::read(&plain)
            .unwrap_or_else(|e| panic!("reading {}: {e}", plain.display()));
    }
    let packed = root().join(format!("{rel}.gz"));
    let file = std::fs::File::open(&packed)
        .unwrap_or_else(|e| panic!("corpus document {rel}: neither {rel} nor {rel}.gz: {e}"));
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("decompressing {}: {e}", packed.display()));
    bytes
}

/// The uncompressed text of a corpus document.
pub fn read_string(rel: &str) -> String {
    String::from_utf8(read(rel)).unwrap_or_else(|e| panic!("{rel} is not UTF-8: {e}"))
}

/// Whether the corpus has this document (in either storage form).
pub fn exists(rel: &str) -> bool {
    root().join(rel).is_file() || root().join(format!("{rel}.gz")).is_file()
}

/// The uncompressed relative names of every document below `dir` (recursively), sorted.
pub fn files_under(dir: &str) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if let Ok(rel) = path.strip_prefix(base) {
                let rel = rel.to_string_lossy();
                out.push(rel.strip_suffix(".gz").unwrap_or(&rel).to_string());
            }
        }
    }
    let base = root();
    let mut out = Vec::new();
    walk(&base, &base.join(dir), &mut out);
    out.sort();
    out
}

/// A real file holding the uncompressed document, for callers that hand a path to the binary
/// or to a peer: the vendored file itself, or a copy decompressed once into the target's
/// temporary folder (written to a unique name and renamed, so parallel tests never read a
/// partial copy).
pub fn path(rel: &str) -> PathBuf {
    let plain = root().join(rel);
    if plain.is_file() {
        return plain;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("corpus")
        .join(rel);
    if out.is_file() {
        return out;
    }
    let parent = out.parent().expect("corpus paths have a folder");
    std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    let partial = parent.join(format!(
        ".{}.{}.{:?}.partial",
        out.file_name().expect("a file name").to_string_lossy(),
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&partial, read(rel)).unwrap_or_else(|e| panic!("{}: {e}", partial.display()));
    std::fs::rename(&partial, &out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    out
}
