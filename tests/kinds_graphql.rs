//! GraphQL kind: corpus normalization (SDL and introspection agree), the GitHub pair diff,
//! introspection over POST against a local server, hostile input, and graphql-inspector.

use schemawatch::core::model::{Kind, ToolSpec};
use schemawatch::core::normalize::normalize;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/graphql")
}

fn load(rel: &str) -> ToolSpec {
    let bytes = std::fs::read(corpus().join(rel)).unwrap();
    normalize(Kind::Graphql, "gh.graphql", &bytes).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn sdl_and_introspection_of_the_same_commit_agree() {
    for date in ["v2021-01-05", "v2021-10-01"] {
        let sdl = load(&format!("github/{date}.graphql"));
        let intro = load(&format!("github-introspection/{date}.json"));
        if sdl != intro {
            let a = serde_json::to_value(&sdl).unwrap();
            let b = serde_json::to_value(&intro).unwrap();
            std::fs::write("/tmp/gqlprobe/sdl.json", serde_json::to_string_pretty(&a).unwrap()).unwrap();
            std::fs::write("/tmp/gqlprobe/intro.json", serde_json::to_string_pretty(&b).unwrap()).unwrap();
            panic!("{date}: SDL and introspection differ");
        }
    }
}
