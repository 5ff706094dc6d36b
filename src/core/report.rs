//! Renderings of a DriftReport: text (one line per change), JSON (stable shape) and Markdown
//! (a changelog grouped by endpoint). Pure and byte-stable: changes are already sorted.
//! Human renderings (text, Markdown) show hidden characters as visible escapes
//! (`\u{E0041}`, [`crate::core::hidden`]); JSON keeps the exact strings.

use crate::core::hidden::escape_hidden;
use crate::core::json::{to_canonical_string, write_canonical, write_json_string};
use crate::core::model::{Change, DriftReport, Severity};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Text for human and CI renderings: CRLF folded to LF, and every hidden character (the one
/// definition in [`crate::core::hidden`]) written as a visible escape (`\u{E0041}`).
pub fn visible(text: &str) -> String {
    escape_hidden(&text.replace("\r\n", "\n"))
}

/// SHA-256 over the RFC 8785 canonical JSON of `{"after", "before", "path", "rule"}`, where
/// `rule` is the rule's stable id (the one it was first published under), so renames and
/// splits do not move ids. Both id forms are prefixes of it.
fn change_digest(c: &Change) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let rule = crate::core::diff::rules::find(&c.rule).map_or(c.rule.as_str(), |r| r.stable_id);
    // The canonical text of `{"after", "before", "path", "rule"}` (keys in canonical order),
    // written in place: building the object would copy both values first.
    let mut identity = String::with_capacity(64 + c.path.len());
    identity.push_str("{\"after\":");
    match &c.after {
        Some(v) => write_canonical(&v.0, &mut identity),
        None => identity.push_str("null"),
    }
    identity.push_str(",\"before\":");
    match &c.before {
        Some(v) => write_canonical(&v.0, &mut identity),
        None => identity.push_str("null"),
    }
    identity.push_str(",\"path\":");
    write_json_string(&c.path, &mut identity);
    identity.push_str(",\"rule\":");
    write_json_string(rule, &mut identity);
    identity.push('}');
    Sha256::digest(identity.as_bytes()).into()
}

fn id_text(prefix: &str, bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut id = String::with_capacity(prefix.len() + 2 * bytes.len());
    id.push_str(prefix);
    for byte in bytes {
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// The stable id of a change: `chg2:` and the first 32 hex digits (128 bits) of the change's
/// digest ([`change_digest`]). Computed when a report is rendered, never stored. 128 bits:
/// a birthday collision between a benign and a hostile change is out of reach, where 64 bits
/// (`chg1:`) took about a CPU-hour (docs/reliability.md H35).
pub fn change_id(c: &Change) -> String {
    id_text("chg2:", &change_digest(c)[..16])
}

/// The deprecated 64-bit id (`chg1:` and the first 16 hex digits of the same digest), still
/// read in accept files and kept as SARIF's `schemawatchChangeId/v1` fingerprint.
pub fn change_id_v1(c: &Change) -> String {
    id_text("chg1:", &change_digest(c)[..8])
}

/// Both ids of a change, `(chg2, chg1)`, from one digest.
pub fn change_ids(c: &Change) -> (String, String) {
    let digest = change_digest(c);
    (
        id_text("chg2:", &digest[..16]),
        id_text("chg1:", &digest[..8]),
    )
}

/// `{"compatibility", "old_fingerprint", "new_fingerprint", "changes": [...]}`.
pub fn report_json(report: &DriftReport) -> Value {
    json!({
        "compatibility": report.compatibility.as_str(),
        "old_fingerprint": report.old_fingerprint,
        "new_fingerprint": report.new_fingerprint,
        "changes": report.changes.iter().map(change_json).collect::<Vec<_>>(),
    })
}

pub fn change_json(c: &Change) -> Value {
    change_json_with_id(c, &change_id(c))
}

/// [`change_json`] for a caller that already computed the change's id.
pub fn change_json_with_id(c: &Change, id: &str) -> Value {
    let mut value = json!({
        "id": id,
        "severity": c.severity.as_str(),
        "path": c.path,
        "kind": c.kind,
        "rule": c.rule,
        "before": c.before.as_ref().map(|v| v.0.clone()),
        "after": c.after.as_ref().map(|v| v.0.clone()),
        "message": c.message,
    });
    // Only when set: a report without a consumer scope keeps its bytes.
    if c.out_of_scope {
        value["out_of_scope"] = json!(true);
    }
    // Only when the stability policy changed its severity (issue 31).
    if let Some(why) = &c.policy {
        value["policy"] = json!(why);
    }
    value
}

fn short(v: &Option<crate::core::model::ValueOrd>) -> String {
    match v {
        None => "none".into(),
        Some(v) => {
            let text = escape_hidden(&to_canonical_string(&v.0));
            if text.chars().count() > 80 {
                format!("{}…", text.chars().take(79).collect::<String>())
            } else {
                text
            }
        }
    }
}

/// One line per change: `severity path rule message (before → after)`.
pub fn report_text(report: &DriftReport) -> String {
    let mut out = format!("compatibility: {}\n", report.compatibility.as_str());
    for c in &report.changes {
        out.push_str(&format!(
            "{:<10} {} [{}] {}",
            c.severity.as_str(),
            escape_hidden(&c.path),
            c.rule,
            escape_hidden(&c.message)
        ));
        if c.before.is_some() || c.after.is_some() {
            out.push_str(&format!(" ({} → {})", short(&c.before), short(&c.after)));
        }
        if c.out_of_scope {
            out.push_str(" [out of scope]");
        }
        if let Some(why) = &c.policy {
            out.push_str(&format!(" [policy: {why}]"));
        }
        out.push('\n');
    }
    out
}

/// Parts of an endpoint that follow its name in a change path.
const ENDPOINT_CHILDREN: &[&str] = &[
    ".method",
    ".path",
    ".description",
    ".deprecated",
    ".security",
    ".side_effects",
    ".parameters.",
    ".request_body",
    ".responses.",
    ".input_schema",
    ".output_schema",
];

/// Text inside a Markdown code span (where Markdown is inert): hidden characters shown,
/// newlines folded, and backticks, which would end the span, replaced.
fn code_span_text(text: &str) -> String {
    visible(text).replace('\n', " ").replace('`', "'")
}

/// The endpoint a change belongs to (`endpoints.NAME...`), or a section for the rest.
pub fn group_of(path: &str) -> String {
    match path.strip_prefix("endpoints.") {
        Some(rest) => {
            let end = ENDPOINT_CHILDREN
                .iter()
                .filter_map(|child| rest.find(child))
                .min()
                .unwrap_or(rest.len());
            format!("Endpoint `{}`", code_span_text(&rest[..end]))
        }
        None if path.is_empty() || path == "remote" => "Contract".into(),
        None => format!(
            "Definition `{}`",
            code_span_text(&path.split('.').take(3).collect::<Vec<_>>().join("."))
        ),
    }
}

/// Markdown-inert text for a table cell: hidden characters shown as escapes, newlines folded,
/// and every character Markdown or HTML would act on (links, images, emphasis, tags, pipes)
/// backslash-escaped or entity-encoded, so provider text cannot inject markup.
fn escape_md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.replace("\r\n", "\n").chars() {
        match c {
            // The visible escape itself is Markdown-inert (`\u` escapes nothing), so it is
            // written as is: a reader sees `\u{E0041}` in the raw and the rendered text.
            c if crate::core::hidden::is_hidden(c) && c != '\n' => {
                out.push_str(&escape_hidden(&c.to_string()))
            }
            '\n' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '#' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text for a code span in a table cell: hidden characters shown, newlines folded, pipes
/// escaped (GFM splits cells on them even in code), backticks that would end the span replaced.
fn escape_code(text: &str) -> String {
    code_span_text(text).replace('|', "\\|")
}

/// A changelog a reviewer can paste into a ticket, grouped by endpoint.
pub fn report_markdown(report: &DriftReport) -> String {
    let mut counts: BTreeMap<Severity, usize> = BTreeMap::new();
    for c in &report.changes {
        *counts.entry(c.severity).or_default() += 1;
    }
    let mut out = format!("## Contract drift: {}\n\n", report.compatibility.as_str());
    out.push_str(&format!(
        "- old fingerprint: `{}`\n- new fingerprint: `{}`\n- changes: {} ({} security, {} breaking, {} compatible, {} info)\n",
        report.old_fingerprint,
        report.new_fingerprint,
        report.changes.len(),
        counts.get(&Severity::Security).unwrap_or(&0),
        counts.get(&Severity::Breaking).unwrap_or(&0),
        counts.get(&Severity::Compatible).unwrap_or(&0),
        counts.get(&Severity::Info).unwrap_or(&0),
    ));
    let mut groups: BTreeMap<String, Vec<&Change>> = BTreeMap::new();
    for c in &report.changes {
        groups.entry(group_of(&c.path)).or_default().push(c);
    }
    for (group, changes) in groups {
        out.push_str(&format!(
            "\n### {group}\n\n| severity | rule | where | change |\n|---|---|---|---|\n"
        ));
        for c in changes {
            out.push_str(&format!(
                "| {} | `{}` | `{}` | {} |\n",
                c.severity.as_str(),
                c.rule,
                escape_code(&c.path),
                escape_md(&c.message)
            ));
        }
    }
    out
}

/// [`report_markdown`] within `max_bytes` (a GitHub step summary holds at most 1 MiB, and a
/// larger one is dropped whole). When the full report fits, it is the full report; otherwise
/// one table with the most severe changes first (the report's order within a severity) and as
/// many rows as fit, then a line counting what was left out by severity.
pub fn report_markdown_bounded(report: &DriftReport, max_bytes: usize) -> String {
    let full = report_markdown(report);
    if full.len() <= max_bytes {
        return full;
    }
    let head_end = full.find("\n### ").unwrap_or(full.len());
    let mut out = full[..head_end].to_string();
    out.push_str("\n### Most severe changes first\n\n| severity | rule | where | change |\n|---|---|---|---|\n");
    let mut ordered: Vec<&Change> = report.changes.iter().collect();
    // Stable: the report's own order within a severity.
    ordered.sort_by_key(|c| std::cmp::Reverse(c.severity));
    // Room for the closing line (its numbers are at most 20 digits each).
    let reserve = 240;
    let mut shown = 0;
    for c in &ordered {
        let row = format!(
            "| {} | `{}` | `{}` | {} |\n",
            c.severity.as_str(),
            c.rule,
            escape_code(&c.path),
            escape_md(&c.message)
        );
        if out.len() + row.len() + reserve > max_bytes {
            break;
        }
        out.push_str(&row);
        shown += 1;
    }
    let mut left: BTreeMap<Severity, usize> = BTreeMap::new();
    for c in &ordered[shown..] {
        *left.entry(c.severity).or_default() += 1;
    }
    out.push_str(&format!(
        "\n{} more changes not shown ({} security, {} breaking, {} compatible, {} info): the summary is capped at {} bytes; `--markdown` or `--json` print them all.\n",
        ordered.len() - shown,
        left.get(&Severity::Security).unwrap_or(&0),
        left.get(&Severity::Breaking).unwrap_or(&0),
        left.get(&Severity::Compatible).unwrap_or(&0),
        left.get(&Severity::Info).unwrap_or(&0),
        max_bytes
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::ValueOrd;

    /// The id as first published: the canonical JSON of the identity object, hashed. Ids are
    /// what `[accept]` lists pin, so the in-place writer must give the same bytes.
    fn published_id(c: &Change) -> String {
        use sha2::{Digest, Sha256};
        let rule = crate::core::diff::rules::find(&c.rule).map_or(c.rule.as_str(), |r| r.stable_id);
        let identity = json!({
            "after": c.after.as_ref().map(|v| &v.0),
            "before": c.before.as_ref().map(|v| &v.0),
            "path": c.path,
            "rule": rule,
        });
        let digest = Sha256::digest(to_canonical_string(&identity).as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("chg1:{hex}")
    }

    /// `chg2:`: the first 128 bits of the same digest.
    fn published_id_v2(c: &Change) -> String {
        use sha2::{Digest, Sha256};
        let rule = crate::core::diff::rules::find(&c.rule).map_or(c.rule.as_str(), |r| r.stable_id);
        let identity = json!({
            "after": c.after.as_ref().map(|v| &v.0),
            "before": c.before.as_ref().map(|v| &v.0),
            "path": c.path,
            "rule": rule,
        });
        let digest = Sha256::digest(to_canonical_string(&identity).as_bytes());
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("chg2:{hex}")
    }

    #[test]
    fn change_ids_are_the_published_ones() {
        let change = |before: Option<Value>, after: Option<Value>, path: &str, rule: &str| Change {
            path: path.into(),
            kind: crate::core::change_kind::ChangeKind::TypeChanged,
            rule: rule.into(),
            severity: Severity::Breaking,
            before: before.map(ValueOrd),
            after: after.map(ValueOrd),
            message: "m".into(),
            out_of_scope: false,
            policy: None,
        };
        let cases = [
            change(None, None, "", "unclassified-change"),
            change(
                Some(json!({"type": "string", "é": [1, 2.5, null], "\u{1F600}": "\"q\"\n"})),
                None,
                "endpoints.listPets.parameters.query.limit",
                "request-parameter-removed",
            ),
            change(
                Some(json!(1)),
                Some(json!({"b": {"a": true}, "a": "x"})),
                "p.\u{7}\u{2028}",
                "no-such-rule",
            ),
            // A rule id that was split (its stable id is the published one).
            change(None, Some(json!("v")), "x", "response-type-changed"),
        ];
        for c in &cases {
            assert_eq!(change_id_v1(c), published_id(c), "{c:?}");
            assert_eq!(change_id(c), published_id_v2(c), "{c:?}");
            assert_eq!(change_ids(c), (change_id(c), change_id_v1(c)));
            assert!(change_id(c).starts_with(&format!("chg2:{}", &change_id_v1(c)[5..])));
        }
    }
}
