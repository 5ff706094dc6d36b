//! Tidy checks over the crate's own source (tests only): the dependency direction of
//! ARCHITECTURE.md ("Dependency direction") and the pure core's "no I/O, no clock".
//!
//! Every `src/**/*.rs` is read as Rust tokens (proc-macro2: comments and string contents are
//! not paths), items under `#[cfg(test)]` and files declared by `#[cfg(test)] mod x;` are
//! skipped, and every path is followed through `use` groups (`use crate::{a, b::c}`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// ARCHITECTURE.md's order, lowest layer first: a module uses only the layers before its own.
/// `cli` is the binary's module (it names the library as `schemawatch::`).
const LAYERS: &[&[&str]] = &[
    &["core"],
    &["process", "fetch", "mcp"],
    &["sources"],
    &["config", "registry"],
    &["refresh", "artifacts", "ci", "views", "metrics", "gateway"],
    &["notify"],
    &["state"],
    &["api"],
    &["ui"],
    &["daemon"],
    &["cli"],
];

/// The uses between two modules of one layer that the code makes (from, to, why). Any other
/// same-layer use fails, and so does an entry here that no code needs any more.
const SAME_LAYER: &[(&str, &str, &str)] = &[
    // lib.rs: `mcp` is "on `fetch`'s HTTP plumbing and `process`".
    (
        "mcp",
        "fetch",
        "Streamable HTTP is fetch's HTTP client, bounds and redaction",
    ),
    (
        "mcp",
        "process",
        "the stdio transport spawns, reaps and kills through process",
    ),
    (
        "fetch",
        "process",
        "a git source's `git show` is a tracked child (fetch/git.rs)",
    ),
    (
        "config",
        "registry",
        "`keep_reviews` defaults to registry::DEFAULT_KEEP_REVIEWS",
    ),
    (
        "refresh",
        "artifacts",
        "a cycle reads the triage classification, stamps provenance",
    ),
    (
        "views",
        "artifacts",
        "the shared JSON shows triage drift and provenance",
    ),
    (
        "views",
        "refresh",
        "the shared JSON shows a cycle's Outcome",
    ),
    (
        "metrics",
        "refresh",
        "metrics count a cycle's Action and Outcome",
    ),
];

/// Paths the pure core never names outside tests: it does no I/O and reads no clock.
const CORE_FORBIDDEN: &[&[&str]] = &[
    &["std", "fs"],
    &["std", "net"],
    &["tokio"],
    &["tokio_postgres"],
    &["reqwest"],
    &["rusqlite"],
    &["SystemTime", "now"],
    &["Instant", "now"],
];

/// One path found in code: its segments (a `use` group expanded) and the line it starts on.
#[derive(Debug)]
struct Found {
    segments: Vec<String>,
    line: usize,
    /// Module nesting at the path (file and inline `mod`s), to resolve leading `super`s.
    depth: usize,
}

fn is_punct(tree: Option<&TokenTree>, ch: char) -> bool {
    matches!(tree, Some(TokenTree::Punct(p)) if p.as_char() == ch)
}

fn is_path_sep(toks: &[TokenTree], i: usize) -> bool {
    matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && is_punct(toks.get(i + 1), ':')
}

fn squeezed(stream: &TokenStream) -> String {
    stream
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

fn is_cfg_test(tree: Option<&TokenTree>) -> bool {
    matches!(tree, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket && squeezed(&g.stream()) == "cfg(test)")
}

/// Index after the item starting at `i`: its trailing `;` or its `{ … }` body.
fn skip_item(toks: &[TokenTree], mut i: usize) -> usize {
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Punct(p) if p.as_char() == ';' => return i + 1,
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Every path starting at `toks[i]`, `use` groups expanded into one path per leaf.
fn paths_at(toks: &[TokenTree], i: usize) -> Vec<Vec<String>> {
    let Some(TokenTree::Ident(first)) = toks.get(i) else {
        return Vec::new();
    };
    let mut prefix = vec![first.to_string()];
    let mut j = i + 1;
    loop {
        if !is_path_sep(toks, j) {
            return vec![prefix];
        }
        match toks.get(j + 2) {
            Some(TokenTree::Ident(next)) => {
                prefix.push(next.to_string());
                j += 3;
            }
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                let mut out = Vec::new();
                for part in inner.split(|t| is_punct(Some(t), ',')) {
                    for tail in paths_at(part, 0) {
                        out.push(prefix.iter().cloned().chain(tail).collect());
                    }
                }
                return out;
            }
            _ => return vec![prefix],
        }
    }
}

/// Collects every path outside `#[cfg(test)]` items; `test_mods` gets the names of
/// `#[cfg(test)] mod x;` declarations (their files are tests).
fn scan(stream: TokenStream, depth: usize, out: &mut Vec<Found>, test_mods: &mut Vec<String>) {
    let toks: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < toks.len() {
        if is_punct(toks.get(i), '#')
            && is_punct(toks.get(i + 1), '!')
            && is_cfg_test(toks.get(i + 2))
        {
            return; // the whole file is a test module
        }
        if is_punct(toks.get(i), '#') && is_cfg_test(toks.get(i + 1)) {
            let end = skip_item(&toks, i + 2);
            if is_punct(toks.get(end.wrapping_sub(1)), ';') {
                let item: Vec<String> = toks[i + 2..end].iter().map(|t| t.to_string()).collect();
                if let Some(at) = item.iter().position(|t| t == "mod") {
                    if let Some(name) = item.get(at + 1) {
                        test_mods.push(name.clone());
                    }
                }
            }
            i = end;
            continue;
        }
        match &toks[i] {
            TokenTree::Ident(id) if id == "mod" => {
                if let (Some(TokenTree::Ident(_)), Some(TokenTree::Group(body))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    if body.delimiter() == Delimiter::Brace {
                        scan(body.stream(), depth + 1, out, test_mods);
                        i += 3;
                        continue;
                    }
                }
            }
            TokenTree::Ident(id) => {
                // A path starts here unless this ident continues one (`a::b`: `b` is no start).
                let continues = i >= 2
                    && is_path_sep(&toks, i - 2)
                    && matches!(toks.get(i.wrapping_sub(3)), Some(TokenTree::Ident(_)));
                if !continues {
                    let line = id.span().start().line;
                    for segments in paths_at(&toks, i) {
                        out.push(Found {
                            segments,
                            line,
                            depth,
                        });
                    }
                }
            }
            TokenTree::Group(g) => scan(g.stream(), depth, out, test_mods),
            _ => {}
        }
        i += 1;
    }
}

/// The top-level crate module a path names (`crate::x`, `schemawatch::x` from the binary,
/// `super::…::x` climbing out of the file's module), if any.
fn crate_module(found: &Found) -> Option<&str> {
    let segs = &found.segments;
    match segs.first().map(String::as_str) {
        Some("crate" | "schemawatch") => segs.get(1).map(String::as_str),
        Some("super") => {
            let up = segs.iter().take_while(|s| *s == "super").count();
            (up >= found.depth)
                .then(|| segs.get(up).map(String::as_str))
                .flatten()
        }
        _ => None,
    }
}

struct SourceFile {
    rel: String,
    module: String,
    found: Vec<Found>,
}

/// Module path length of a file under `src/`: `a.rs` and `a/mod.rs` are 1, `a/b.rs` is 2.
fn module_depth(rel: &Path) -> usize {
    let parts = rel.components().count();
    if rel.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every non-test source file of the crate (lib.rs and main.rs, the roots, excluded).
fn sources() -> Vec<SourceFile> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let mut test_files = BTreeSet::new();
    let mut files = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(&src).unwrap().to_path_buf();
        let text = std::fs::read_to_string(&path).unwrap();
        let stream =
            TokenStream::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        let (mut found, mut test_mods) = (Vec::new(), Vec::new());
        scan(stream, module_depth(&rel), &mut found, &mut test_mods);
        // `#[cfg(test)] mod x;` in `a/mod.rs` or `lib.rs` is `a/x.rs`; in `a/b.rs`, `a/b/x.rs`.
        let dir = match rel.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => rel.parent().unwrap().to_path_buf(),
            _ => rel.with_extension(""),
        };
        for name in test_mods {
            test_files.insert(dir.join(format!("{name}.rs")));
            test_files.insert(dir.join(&name).join("mod.rs"));
        }
        let module = rel
            .iter()
            .next()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        files.push((rel, module, found));
    }
    files
        .into_iter()
        .filter(|(rel, module, _)| !test_files.contains(rel) && module != "lib" && module != "main")
        .map(|(rel, module, found)| SourceFile {
            rel: rel.display().to_string(),
            module,
            found,
        })
        .collect()
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// What is wrong with the uses `files` make, by ARCHITECTURE.md's order; and which
/// same-layer exceptions they used.
fn layer_violations(files: &[SourceFile]) -> (Vec<String>, BTreeSet<(String, String)>) {
    let mut wrong = Vec::new();
    let mut used = BTreeSet::new();
    for file in files {
        let Some(from) = layer_of(&file.module) else {
            wrong.push(format!(
                "src/{}: module `{}` is in no layer of LAYERS",
                file.rel, file.module
            ));
            continue;
        };
        for found in &file.found {
            let Some(to_module) = crate_module(found) else {
                continue;
            };
            if to_module == file.module {
                continue;
            }
            let at = format!(
                "src/{}:{} `{}`",
                file.rel,
                found.line,
                found.segments.join("::")
            );
            match layer_of(to_module) {
                None => wrong.push(format!("{at}: `{to_module}` is in no layer of LAYERS")),
                Some(to) if to > from => wrong.push(format!(
                    "{at}: `{}` imports from a layer above it",
                    file.module
                )),
                Some(to) if to == from => {
                    if SAME_LAYER
                        .iter()
                        .any(|(a, b, _)| *a == file.module && *b == to_module)
                    {
                        used.insert((file.module.clone(), to_module.to_string()));
                    } else {
                        wrong.push(format!("{at}: `{}` and `{to_module}` share a layer and no SAME_LAYER entry allows it", file.module));
                    }
                }
                Some(_) => {}
            }
        }
    }
    (wrong, used)
}

#[test]
fn modules_import_only_from_layers_below_them() {
    let files = sources();
    let (wrong, used) = layer_violations(&files);
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's dependency direction is broken:\n{}",
        wrong.join("\n")
    );
    let stale: Vec<_> = SAME_LAYER
        .iter()
        .filter(|(a, b, _)| !used.contains(&(a.to_string(), b.to_string())))
        .map(|(a, b, _)| format!("{a} -> {b}"))
        .collect();
    assert!(
        stale.is_empty(),
        "SAME_LAYER entries no code needs any more: {stale:?}"
    );
    let modules: BTreeSet<&str> = files.iter().map(|f| f.module.as_str()).collect();
    let listed: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    assert_eq!(
        modules, listed,
        "LAYERS lists exactly the crate's top-level modules"
    );
}

/// Where `files` of the core name a path of CORE_FORBIDDEN (anywhere in a path:
/// `std::time::Instant::now` names `Instant::now`).
fn core_violations(files: &[SourceFile]) -> Vec<String> {
    let mut wrong = Vec::new();
    for file in files.iter().filter(|f| f.module == "core") {
        for found in &file.found {
            let named = CORE_FORBIDDEN.iter().any(|p| {
                found
                    .segments
                    .windows(p.len())
                    .any(|w| w.iter().zip(p.iter()).all(|(a, b)| a == b))
            });
            if named {
                wrong.push(format!(
                    "src/{}:{} `{}`",
                    file.rel,
                    found.line,
                    found.segments.join("::")
                ));
            }
        }
    }
    wrong
}

#[test]
fn the_core_names_no_io_and_no_clock() {
    let wrong = core_violations(&sources());
    assert!(
        wrong.is_empty(),
        "src/core does I/O or reads a clock:\n{}",
        wrong.join("\n")
    );
}

/// The scanner itself: what it must see and what it must not, so the checks above can fail.
#[test]
fn the_scanner_sees_paths_through_groups_and_skips_tests_and_comments() {
    let text = r#"
        //! crate::docs_only is a comment
        use crate::{config::Watch, registry};
        use std::{fs, io};
        fn f() { let _ = crate::views::x(); let _ = "crate::in_a_string"; super::sibling::g(); }
        mod inner { fn h() { super::super::api::y(); } }
        #[cfg(test)]
        mod tests { use crate::daemon; }
        #[cfg(test)]
        mod more;
        fn k() { let _ = std::time::Instant::now(); }
    "#;
    let (mut found, mut test_mods) = (Vec::new(), Vec::new());
    scan(
        TokenStream::from_str(text).unwrap(),
        1,
        &mut found,
        &mut test_mods,
    );
    let modules: Vec<&str> = found.iter().filter_map(crate_module).collect();
    assert_eq!(modules, ["config", "registry", "views", "sibling", "api"]);
    assert_eq!(test_mods, ["more"]);
    let paths: Vec<String> = found.iter().map(|f| f.segments.join("::")).collect();
    for want in ["std::fs", "std::io", "std::time::Instant::now"] {
        assert!(paths.contains(&want.to_string()), "{want} in {paths:?}");
    }
    let views = found
        .iter()
        .find(|f| crate_module(f) == Some("views"))
        .unwrap();
    assert_eq!(views.line, 5);

    // A use from a layer above and an unlisted same-layer use are both reported.
    let file = |module: &str, text: &str| {
        let (mut found, mut mods) = (Vec::new(), Vec::new());
        scan(
            TokenStream::from_str(text).unwrap(),
            1,
            &mut found,
            &mut mods,
        );
        SourceFile {
            rel: format!("{module}.rs"),
            module: module.to_string(),
            found,
        }
    };
    let (wrong, _) = layer_violations(&[
        file("core", "use crate::fetch::X;"),
        file("ci", "fn f() { crate::views::g() }"),
    ]);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong[0].contains("imports from a layer above"), "{wrong:?}");
    assert!(wrong[1].contains("share a layer"), "{wrong:?}");
    let (wrong, used) =
        layer_violations(&[file("views", "use crate::{refresh::Outcome, core::x};")]);
    assert!(wrong.is_empty(), "{wrong:?}");
    assert!(used.contains(&("views".to_string(), "refresh".to_string())));

    // The core check sees a clock read through a full path and a grouped `use std::{fs}`.
    let core = file(
        "core",
        "use std::{fs, io::Read}; fn f() { std::time::Instant::now(); }",
    );
    let wrong = core_violations(&[core, file("fetch", "use std::fs;")]);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].contains("std::fs") && wrong[1].contains("Instant::now"),
        "{wrong:?}"
    );
}

/// The import graph among the files of `src/core/diff/` (outside tests), by file stem (`mod`
/// for `mod.rs`): `super::x` / `crate::core::diff::x` names file `x` when one exists, else an
/// item of `mod.rs`; in `mod.rs`, `x::…` names its child file `x`.
fn diff_graph(files: &[SourceFile]) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let stem_of = |rel: &str| -> Option<String> {
        let rest = rel.strip_prefix("core/diff/")?;
        (!rest.contains('/')).then(|| rest.trim_end_matches(".rs").to_string())
    };
    let stems: BTreeSet<String> = files.iter().filter_map(|f| stem_of(&f.rel)).collect();
    let mut graph = std::collections::BTreeMap::new();
    for file in files {
        let Some(from) = stem_of(&file.rel) else {
            continue;
        };
        let mut to = BTreeSet::new();
        for found in &file.found {
            let s: Vec<&str> = found.segments.iter().map(String::as_str).collect();
            let named = match s.as_slice() {
                // (`pub(super)`, `pub(in crate::core::diff)` name no item.)
                ["crate", "core", "diff", rest @ ..] if !rest.is_empty() => Some(rest),
                ["super", rest @ ..] if from != "mod" && !rest.is_empty() => Some(rest),
                ["self", rest @ ..] if from == "mod" && rest.len() >= 2 => Some(rest),
                [first, ..] if from == "mod" && s.len() >= 2 && stems.contains(*first) => {
                    Some(&s[..])
                }
                _ => None,
            };
            let Some(named) = named else { continue };
            let target = match named.first() {
                Some(x) if stems.contains(*x) => x.to_string(),
                _ => "mod".to_string(),
            };
            if target != from {
                to.insert(target);
            }
        }
        graph.insert(from, to);
    }
    graph
}

/// The files of `graph` that lie on an import cycle, and the imports that close one (an
/// import `a -> b` where `b` reaches `a` back).
fn diff_cycles(
    graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
) -> (BTreeSet<String>, Vec<(String, String)>) {
    let reach = |start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = graph
            .get(start)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        while let Some(next) = todo.pop() {
            if seen.insert(next.to_string()) {
                todo.extend(graph.get(next).into_iter().flatten().map(String::as_str));
            }
        }
        seen
    };
    let reached: std::collections::BTreeMap<&str, BTreeSet<String>> =
        graph.keys().map(|k| (k.as_str(), reach(k))).collect();
    let on_cycle: BTreeSet<String> = reached
        .iter()
        .filter(|(k, r)| r.contains(**k))
        .map(|(k, _)| k.to_string())
        .collect();
    let back: Vec<(String, String)> = graph
        .iter()
        .flat_map(|(a, to)| to.iter().map(move |b| (a.clone(), b.clone())))
        .filter(|(a, b)| reached.get(b.as_str()).is_some_and(|r| r.contains(a)))
        .collect();
    (on_cycle, back)
}

/// `src/core/diff/` has no import cycle: a rule family is a leaf that the classifier wires in
/// (ARCHITECTURE.md, "Add a rule").
#[test]
fn core_diff_has_no_import_cycle() {
    let graph = diff_graph(&sources());
    let (on_cycle, back) = diff_cycles(&graph);
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    eprintln!(
        "core/diff: {} files, {edges} imports between them; {} files on a cycle, {} imports close one",
        graph.len(),
        on_cycle.len(),
        back.len()
    );
    // Before the restructuring of issue 27: 13 of 13 files on a cycle, 66 imports closing one.
    assert!(
        on_cycle.is_empty(),
        "src/core/diff has import cycles; files on a cycle: {on_cycle:?}\nimports closing one: {back:?}"
    );
    // Rule families are leaves: a family file uses only the base modules; what it needs
    // from another family reaches it as data through `mod.rs` (the walk) and `rules.rs`
    // (the registry), the only files that name families.
    let wrong: Vec<String> = graph
        .iter()
        .filter(|(from, _)| !DIFF_TOP.contains(&from.as_str()))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| !DIFF_BASE.contains(&t.as_str()))
                .map(move |t| format!("src/core/diff/{from}.rs uses {t}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "a rule family imports another family or the walk:\n{}",
        wrong.join("\n")
    );
}

/// The files of `src/core/diff/` that wire the families together (the walk, the registry).
const DIFF_TOP: &[&str] = &["mod", "rules"];
/// The files every rule family may use: the rule type, the emitter, the shared rules, the
/// pairing and the schema walker.
const DIFF_BASE: &[&str] = &["rule", "emit", "shared", "pair", "schema"];

#[test]
fn the_diff_graph_sees_sibling_imports_and_cycles() {
    let file = |rel: &str, text: &str| {
        let (mut found, mut mods) = (Vec::new(), Vec::new());
        scan(
            TokenStream::from_str(text).unwrap(),
            module_depth(Path::new(rel)),
            &mut found,
            &mut mods,
        );
        SourceFile {
            rel: rel.to_string(),
            module: "core".to_string(),
            found,
        }
    };
    let files = [
        file(
            "core/diff/mod.rs",
            "pub mod a; pub mod b; use a::f; fn g(x: u8) {}",
        ),
        file(
            "core/diff/a.rs",
            "use super::b::X; fn f() { crate::core::diff::c::h() }",
        ),
        file(
            "core/diff/b.rs",
            "use super::{Emitter, a}; #[cfg(test)] mod t { use super::super::c; }",
        ),
        file("core/diff/c.rs", "use crate::core::model::Kind;"),
    ];
    let graph = diff_graph(&files);
    let names = |k: &str| graph[k].iter().cloned().collect::<Vec<_>>();
    assert_eq!(names("mod"), ["a"]);
    assert_eq!(names("a"), ["b", "c"]);
    assert_eq!(names("b"), ["a", "mod"]);
    assert!(names("c").is_empty());
    let (on_cycle, back) = diff_cycles(&graph);
    assert_eq!(on_cycle.into_iter().collect::<Vec<_>>(), ["a", "b", "mod"]);
    assert_eq!(back.len(), 4, "{back:?}");
}
