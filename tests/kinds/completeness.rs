//! The completeness harness (tests/common/completeness.rs) over a rich MCP snapshot: tools,
//! annotations, `_meta`, prompts (arguments, messages), resource templates, resources and
//! capabilities. No mutant may be `identical` outside MCP's descriptive allow-list.

use crate::common::completeness::{keyword_list, run_json, run_sdl, run_xml, run_yaml};
use schemawatch::core::model::Kind;
use schemawatch::core::normalize::allow_list;

const FIXTURE: &str = include_str!("../completeness/mcp-rich.json");
const KEYWORDS: &str = include_str!("../completeness/mcp.keywords");

#[test]
fn every_position_of_a_rich_mcp_snapshot_is_seen() {
    let doc: serde_json::Value = serde_json::from_str(FIXTURE).expect("fixture JSON");
    let entries = allow_list::descriptive(Kind::Mcp).expect("MCP is deny-by-default");
    let allowed = |pattern: &str| {
        entries.iter().any(|(field, _)| {
            field
                .split(", ")
                .any(|f| pattern == f || pattern.starts_with(&format!("{f}.")))
        })
    };
    let summary = run_json(Kind::Mcp, &doc, &keyword_list(KEYWORDS), &allowed);
    summary.assert_complete(Kind::Mcp);
    assert!(
        summary.total > 150,
        "a rich fixture: {} mutants",
        summary.total
    );
}

/// Whether a position's pattern is on `kind`'s allow-list: an entry names a key (its whole
/// subtree), a dotted path (`paths.*.*.tags`, `*` one key), or for XML a path suffix
/// (`Schema/@Alias`, a leading `edmx:` dropped).
fn allowed_by(kind: Kind) -> impl Fn(&str) -> bool {
    let entries = allow_list::descriptive(kind).expect("deny-by-default kind");
    move |pattern: &str| {
        let pattern = pattern.replace("[]", "");
        let pattern = pattern.as_str();
        entries.iter().any(|(field, _)| {
            field.split(", ").any(|f| {
                let f = f
                    .split(" (")
                    .next()
                    .unwrap_or(f)
                    .replace("edmx:", "")
                    .replace("[]", "");
                let first = pattern.split('.').next().unwrap_or(pattern);
                let glob = |p: &str| {
                    let (ps, fs): (Vec<&str>, Vec<&str>) =
                        (p.split('.').collect(), f.split('.').collect());
                    ps.len() >= fs.len() && fs.iter().zip(&ps).all(|(a, b)| *a == "*" || a == b)
                };
                pattern == f
                    || first == f
                    || glob(pattern)
                    || pattern.ends_with(&format!("/{f}"))
                    || pattern
                        .split('.')
                        .any(|step| step == f || step == format!("{f}[]"))
                        && ["example", "examples"].contains(&f.as_str())
            })
        })
    }
}

fn check(summary: crate::common::completeness::Summary, kind: Kind, at_least: usize) {
    summary.assert_complete(kind);
    assert!(
        summary.total >= at_least,
        "a rich fixture: {} mutants",
        summary.total
    );
}

#[test]
fn every_position_of_a_rich_openapi_3_1_document_is_seen() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../completeness/openapi-3.1-rich.json")).unwrap();
    let keywords = keyword_list(include_str!("../completeness/openapi.keywords"));
    let summary = run_json(Kind::Openapi, &doc, &keywords, &allowed_by(Kind::Openapi));
    check(summary, Kind::Openapi, 200);
}

#[test]
fn every_position_of_a_rich_swagger_2_document_is_seen() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../completeness/swagger-2.0-rich.json")).unwrap();
    let keywords = keyword_list(include_str!("../completeness/swagger.keywords"));
    let summary = run_json(Kind::Openapi, &doc, &keywords, &allowed_by(Kind::Openapi));
    check(summary, Kind::Openapi, 100);
}

#[test]
fn every_position_of_a_rich_openapi_yaml_document_is_seen() {
    let keywords = keyword_list(include_str!("../completeness/openapi-yaml.keywords"));
    let summary = run_yaml(
        Kind::Openapi,
        include_str!("../completeness/openapi-3.0-rich.yaml"),
        &keywords,
        &allowed_by(Kind::Openapi),
    );
    check(summary, Kind::Openapi, 60);
}

#[test]
fn every_position_of_a_rich_openrpc_document_is_seen() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../completeness/openrpc-rich.json")).unwrap();
    let keywords = keyword_list(include_str!("../completeness/openrpc.keywords"));
    let summary = run_json(Kind::Openrpc, &doc, &keywords, &allowed_by(Kind::Openrpc));
    check(summary, Kind::Openrpc, 100);
}

#[test]
fn every_position_of_a_rich_odata_document_is_seen() {
    let keywords = keyword_list(include_str!("../completeness/odata.keywords"));
    let summary = run_xml(
        Kind::Odata,
        include_str!("../completeness/odata-rich.xml"),
        &keywords,
        &allowed_by(Kind::Odata),
    );
    check(summary, Kind::Odata, 150);
}

#[test]
fn every_position_of_a_rich_graphql_sdl_is_seen() {
    let keywords = keyword_list(include_str!("../completeness/graphql.keywords"));
    let summary = run_sdl(
        Kind::Graphql,
        include_str!("../completeness/graphql-rich.graphql"),
        &keywords,
        &allowed_by(Kind::Graphql),
    );
    check(summary, Kind::Graphql, 100);
}
