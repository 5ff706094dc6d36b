//! The completeness harness (tests/common/completeness.rs) over a rich MCP snapshot: tools,
//! annotations, `_meta`, prompts (arguments, messages), resource templates, resources and
//! capabilities. No mutant may be `identical` outside MCP's descriptive allow-list.

use crate::common::completeness::{keyword_list, run_json};
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
