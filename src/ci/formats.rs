//! CI-native renderings of a gated report: SARIF 2.1.0, JUnit XML, GitHub workflow commands
//! and GitLab Code Quality JSON. One escaping layer per format; levels are relative to
//! `--fail-on` (at or above it: error; below: note / notice), and accepted changes are marked
//! the way each format marks a suppression. Pure and byte-stable.

use super::gate::{Gate, GateChange, Standing};
use crate::core::diff::rules;
use crate::core::model::Severity;
use crate::core::report::{group_of, visible};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Where the new document is, as the formats name a file: a git blob's path, a URL as is, a
/// file path without a leading `./`.
pub fn document_path(document: &str) -> String {
    let path = match document.strip_prefix("git:") {
        Some(rest) => rest.split_once(':').map_or(rest, |(_, p)| p),
        None => document,
    };
    path.trim_start_matches("./").to_string()
}

/// A URI reference for SARIF: unreserved characters, `/`, `:` and `@` kept, the rest
/// percent-encoded (spaces in paths are common).
fn uri_reference(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:@!$&'()*+,;=%".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn rule_doc(id: &str) -> &'static str {
    rules::find(id).map_or("", |r| r.doc)
}

fn accepted_note(standing: &Standing) -> Option<String> {
    match standing {
        Standing::Accepted(e) => Some(format!(
            "accepted by {} until {}: {}",
            e.reviewer, e.expires, e.reason
        )),
        _ => None,
    }
}

/// The note an out-of-scope change carries in every rendering.
const OUT_OF_SCOPE_NOTE: &str = "out of the consumer's scope (uses)";

/// An accepted change's note, else an out-of-scope change's.
fn note_of(c: &GateChange) -> Option<String> {
    accepted_note(&c.standing)
        .or_else(|| c.change.out_of_scope.then(|| OUT_OF_SCOPE_NOTE.to_string()))
}

/// SARIF message text: hidden characters shown, and square brackets escaped (`\[`, `\]`) so
/// provider text cannot form an embedded link (`[text](url)`, SARIF §3.11.6) that viewers
/// render; a backslash before a bracket is doubled so it cannot cancel the escape.
fn sarif_text(text: &str) -> String {
    let text = visible(text);
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('[' | ']')) => out.push_str("\\\\"),
            '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The SARIF region of a change: its line and column in the new document, else the file's
/// first line.
fn region(c: &GateChange) -> Value {
    match &c.location {
        Some(l) => json!({"startLine": l.position.line, "startColumn": l.position.column}),
        None => json!({"startLine": 1}),
    }
}

/// SARIF 2.1.0: one rule per rule id (its doc line as help), a result per change with the
/// change id as partial fingerprint and a location on the new document.
pub fn sarif(gate: &Gate, document: &str) -> Value {
    let mut rule_ids: Vec<&str> = gate
        .changes
        .iter()
        .map(|c| c.change.rule.as_str())
        .collect();
    rule_ids.sort_unstable();
    rule_ids.dedup();
    let index: BTreeMap<&str, usize> = rule_ids.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let rules_json: Vec<Value> = rule_ids
        .iter()
        .map(|id| {
            let doc = rule_doc(id);
            let default = rules::find(id).map_or("error", |r| match r.severity {
                Severity::Breaking | Severity::Security => "error",
                Severity::Compatible | Severity::Info => "note",
            });
            json!({
                "id": id,
                "shortDescription": {"text": doc},
                "fullDescription": {"text": doc},
                "help": {"text": doc},
                "defaultConfiguration": {"level": default},
            })
        })
        .collect();
    let uri = uri_reference(&document_path(document));
    let results: Vec<Value> = gate
        .changes
        .iter()
        .map(|c| {
            let mut result = json!({
                "ruleId": c.change.rule,
                "ruleIndex": index.get(c.change.rule.as_str()).copied().unwrap_or(0),
                "level": if c.at_or_above { "error" } else { "note" },
                "message": {"text": sarif_text(&c.change.message)},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        "region": region(c)
                    },
                    "logicalLocations": [{"fullyQualifiedName": visible(&c.change.path), "kind": "member"}]
                }],
                "partialFingerprints": {"schemawatchChangeId/v1": c.id_v1, "schemawatchChangeId/v2": c.id},
                "properties": {"severity": c.change.severity.as_str(), "kind": c.change.kind},
            });
            if c.change.out_of_scope {
                result["properties"]["out_of_scope"] = json!(true);
            }
            if let Some(justification) = accepted_note(&c.standing) {
                result["suppressions"] = json!([{
                    "kind": "external",
                    "status": "accepted",
                    "justification": sarif_text(&justification),
                }]);
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "schemawatch",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules_json,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

/// XML text and attribute escaping; characters XML 1.0 forbids are removed.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in visible(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c as u32, 0xFFFE | 0xFFFF) => {}
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: a test case per endpoint (or section) with changes, a failure per change at or
/// above `--fail-on`, accepted changes as skipped.
pub fn junit(gate: &Gate, document: &str) -> String {
    let mut cases: BTreeMap<String, Vec<&GateChange>> = BTreeMap::new();
    for c in &gate.changes {
        cases.entry(group_of(&c.change.path)).or_default().push(c);
    }
    let failing = |c: &&GateChange| c.at_or_above && !matches!(c.standing, Standing::Accepted(_));
    let failures: usize = gate.changes.iter().filter(failing).count();
    let skipped = gate
        .changes
        .iter()
        .filter(|c| matches!(c.standing, Standing::Accepted(_)))
        .count();
    let tests = cases.len().max(1);
    let suite = xml(&document_path(document));
    let file = suite.clone();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"schemawatch\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{suite}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">\n"
    ));
    if cases.is_empty() {
        out.push_str(&format!(
            "    <testcase classname=\"{suite}\" name=\"contract\"/>\n"
        ));
    }
    for (group, changes) in &cases {
        // The case's line: the first of its changes' (CI tools read `file` and `line`).
        let line = changes
            .iter()
            .filter_map(|c| c.location.as_ref())
            .map(|l| l.position.line)
            .min()
            .map_or(String::new(), |line| {
                format!(" file=\"{file}\" line=\"{line}\"")
            });
        out.push_str(&format!(
            "    <testcase classname=\"{suite}\" name=\"{}\"{line}>\n",
            xml(group)
        ));
        for c in changes {
            if let Some(note) = note_of(c) {
                out.push_str(&format!(
                    "      <skipped message=\"{} {}: {}\"/>\n",
                    xml(&c.id),
                    xml(&c.change.rule),
                    xml(&note)
                ));
            } else if c.at_or_above {
                let at = c.location.as_ref().map_or(String::new(), |l| {
                    format!(" at line {}, column {}", l.position.line, l.position.column)
                });
                out.push_str(&format!(
                    "      <failure type=\"{}\" message=\"{}\">{} {} ({}){at}: {}</failure>\n",
                    xml(&c.change.rule),
                    xml(&c.change.message),
                    xml(&c.id),
                    xml(&c.change.path),
                    c.change.severity.as_str(),
                    xml(&c.change.message)
                ));
            }
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Workflow-command data escaping.
fn gh_data(text: &str) -> String {
    visible(text)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Workflow-command property escaping (data escaping plus `:` and `,`).
fn gh_property(text: &str) -> String {
    gh_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands: `::error` for changes at or above `--fail-on`, `::notice`
/// for compatible ones and accepted ones (info changes are left to the step summary).
pub fn github(gate: &Gate, document: &str) -> String {
    let file = gh_property(&document_path(document));
    let mut out = String::new();
    for c in &gate.changes {
        let note = note_of(c);
        let command = if note.is_none() && c.at_or_above {
            "error"
        } else if note.is_some() || c.change.severity >= Severity::Compatible {
            "notice"
        } else {
            continue;
        };
        let mut message = format!("{} ({} {})", c.change.message, c.change.path, c.id);
        if let Some(note) = note {
            message.push_str(&format!(" — {note}"));
        }
        let at = c.location.as_ref().map_or(String::new(), |l| {
            format!(",line={},col={}", l.position.line, l.position.column)
        });
        out.push_str(&format!(
            "::{command} file={file}{at},title={}::{}\n",
            gh_property(&c.change.rule),
            gh_data(&message)
        ));
    }
    out
}

/// GitLab Code Quality: an issue per change, the change id as fingerprint.
pub fn gitlab(gate: &Gate, document: &str) -> Value {
    let path = document_path(document);
    let issues: Vec<Value> = gate
        .changes
        .iter()
        .map(|c| {
            let severity = match (&c.standing, c.at_or_above, c.change.severity) {
                (Standing::Accepted(_), _, _) => "info",
                (_, true, Severity::Security) => "critical",
                (_, true, _) => "major",
                (_, false, Severity::Info) => "info",
                (_, false, _) => "minor",
            };
            let mut description = format!(
                "{} ({})",
                visible(&c.change.message),
                visible(&c.change.path)
            );
            if let Some(note) = note_of(c) {
                description.push_str(&format!(" — {}", visible(&note)));
            }
            json!({
                "description": description,
                "check_name": c.change.rule,
                "fingerprint": c.id,
                "severity": severity,
                "location": {"path": path, "lines": {"begin": c.location.as_ref().map_or(1, |l| l.position.line)}},
            })
        })
        .collect();
    Value::Array(issues)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ci::accept::Date;
    use crate::ci::gate::evaluate;
    use crate::core::model::{Change, Compatibility, DriftReport, ValueOrd};

    const HOSTILE: &str = "gone\r\n::add-mask::x\n::error::forged, [click](https://evil.example) ![i](https://evil.example/i.png) <script>alert(1)</script> \u{1}\u{b}\u{E0041}\u{200B} 100% a:b";

    fn report() -> DriftReport {
        DriftReport {
            compatibility: Compatibility::Breaking,
            old_fingerprint: "sha256:a".into(),
            new_fingerprint: "sha256:b".into(),
            changes: vec![Change {
                path: "endpoints.listPets".into(),
                kind: crate::core::change_kind::ChangeKind::EndpointRemoved,
                rule: "endpoint-removed".into(),
                severity: Severity::Breaking,
                before: Some(ValueOrd(json!("GET /pets"))),
                after: None,
                message: HOSTILE.into(),
                out_of_scope: false,
                policy: None,
            }],
        }
    }

    fn gate(r: &DriftReport) -> Gate<'_> {
        evaluate(
            r,
            None,
            "api/open api.yaml",
            Date::parse("2026-12-01").unwrap(),
            Some(Compatibility::Breaking),
        )
    }

    #[test]
    fn github_commands_cannot_be_forged_by_provider_text() {
        let r = report();
        let out = github(&gate(&r), "api/open api.yaml");
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with("::error file=api/open api.yaml,title=endpoint-removed::"));
        assert!(out.contains("%0A::add-mask::x%0A::error::forged"), "{out}");
        assert!(out.contains("100%25"), "{out}");
        assert!(out.contains("\\u{E0041}\\u{200B}"), "{out}");
        assert!(!out.contains('\r'));
    }

    #[test]
    fn markdown_is_inert_for_provider_text() {
        let md = crate::core::report::report_markdown(&report());
        assert!(!md.contains("[click](https://evil.example)"), "{md}");
        assert!(md.contains("\\[click\\]\\(https://evil.example\\)"), "{md}");
        assert!(
            !md.contains("<script>") && md.contains("&lt;script&gt;"),
            "{md}"
        );
        assert!(
            md.contains("\\u{E0041}") && !md.contains('\u{E0041}'),
            "{md}"
        );
    }

    #[test]
    fn junit_is_escaped_and_has_no_forbidden_characters() {
        let r = report();
        let out = junit(&gate(&r), "api/open api.yaml");
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(!out.contains('\u{1}') && !out.contains('\u{b}'));
        assert!(out.contains("failures=\"1\""));
        assert!(
            out.contains("\\u{1}"),
            "hidden controls are shown, not dropped: {out}"
        );
    }

    #[test]
    fn sarif_and_gitlab_keep_the_change_id_and_a_file_location() {
        let r = report();
        let g = gate(&r);
        let s = sarif(&g, "api/open api.yaml");
        let result = &s["runs"][0]["results"][0];
        assert_eq!(result["level"], "error");
        assert_eq!(
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "api/open%20api.yaml"
        );
        assert!(result["partialFingerprints"]["schemawatchChangeId/v1"]
            .as_str()
            .unwrap()
            .starts_with("chg1:"));
        assert!(result["partialFingerprints"]["schemawatchChangeId/v2"]
            .as_str()
            .unwrap()
            .starts_with("chg2:"));
        assert!(result["message"]["text"]
            .as_str()
            .unwrap()
            .contains("\\u{E0041}"));
        // No embedded link survives: brackets are escaped, a backslash cannot cancel that.
        let text = result["message"]["text"].as_str().unwrap();
        assert!(!text.contains("[click]("), "{text}");
        assert!(text.contains("\\[click\\](https://evil.example)"), "{text}");
        assert_eq!(sarif_text("a\\[b](c)"), "a\\\\\\[b\\](c)");
        let gl = gitlab(&g, "git:origin/main:api/openapi.yaml");
        assert_eq!(gl[0]["location"]["path"], "api/openapi.yaml");
        assert_eq!(gl[0]["severity"], "major");
    }
}
