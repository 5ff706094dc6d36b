//! Exploration draft 2.
use schemawatch::core::diff::classify;
use schemawatch::core::normalize::openapi;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

#[test]
fn probe_pairs() {
    let manifest = std::fs::read_to_string(corpus().join("MANIFEST.md")).unwrap();
    let mut cur: Option<(String, String)> = None;
    for line in manifest.lines() {
        if let Some(rest) = line.strip_prefix("### `") {
            let parts: Vec<&str> = rest.split('`').collect();
            if parts.len() >= 3 && parts[1] == " -> " {
                cur = Some((parts[0].into(), parts[2].into()));
            } else {
                cur = None;
            }
            continue;
        }
        let Some((old, new)) = &cur else { continue };
        if !(old.ends_with(".json") || old.ends_with(".yaml")) || old.starts_with("graphql") || old.starts_with("openrpc") || old.starts_with("mcp") || (old.starts_with("optimade") && !old.contains("openapi")) {
            continue;
        }
        if let Some(list) = line.strip_prefix("- removed operations (first 8): ") {
            let a = openapi::normalize("a.b", &std::fs::read(corpus().join(old)).unwrap()).unwrap();
            let b = openapi::normalize("a.b", &std::fs::read(corpus().join(new)).unwrap()).unwrap();
            let r = classify(&a, &b, &Default::default());
            eprintln!("{old} -> {new}: {:?} {} changes", r.compatibility, r.changes.len());
            for c in r.changes.iter().filter(|c| c.rule.contains("unclassified")) {
                eprintln!("  UNCLASSIFIED {}", c.path);
            }
            for op in list.split("; ") {
                let (m, p) = op.split_once(' ').unwrap();
                let id = format!("{m} {}", openapi::normalize_path(p));
                let removed = r.changes.iter().any(|c| c.rule == "endpoint-removed" && c.before.as_ref().map(|v| v.0.as_str() == Some(&id)).unwrap_or(false));
                let old_e = a.endpoints.iter().find(|e| e.identity() == id);
                let new_same = b.endpoints.iter().find(|e| e.identity() == id);
                let new_op = old_e.and_then(|o| o.operation_id.as_ref()).and_then(|op| b.endpoints.iter().find(|e| e.operation_id.as_ref() == Some(op)));
                eprintln!("  {op} -> id {id} removed={removed} old={:?} new_same={:?} new_by_op={:?}", old_e.map(|e| (&e.name, &e.path_template)), new_same.map(|e| (&e.name, &e.path_template)), new_op.map(|e| e.identity()));
                let name = old_e.map(|e| e.name.clone()).unwrap_or_default();
                for c in r.changes.iter().filter(|c| c.path.starts_with(&format!("endpoints.{name}.")) && !c.path.contains(".responses.") ) {
                    eprintln!("      {} {} {:?} {:?}", c.rule, c.path, c.before, c.after);
                }
            }
        }
    }
}
