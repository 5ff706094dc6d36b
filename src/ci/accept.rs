//! Accept files: change-scoped exceptions for the CI gate, each with who approved it, why and
//! until when (`[[accept]]` entries in TOML).
//!
//! ```toml
//! [[accept]]
//! change = "chg2:0123456789abcdef0123456789abcdef"
//! rule = "endpoint-removed"     # optional: the entry accepts only a change of this rule
//! path = "endpoints.listPets"   # optional: … and at this path
//! reviewer = "alice"
//! reason = "clients migrated in PR 123"
//! expires = "2027-03-31"        # valid through 23:59:59 UTC of that day
//! file = "openapi.yaml"         # optional: only for this spec
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;

/// How far ahead an entry may expire, counted from the check date.
pub const MAX_VALIDITY_DAYS: i64 = 366;

pub use crate::core::sunset::Date;

impl Date {
    /// Today (UTC) by the system clock (the core never reads the clock).
    pub fn today() -> Date {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Date::from_unix_seconds(seconds)
    }
}

/// One `[[accept]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptEntry {
    pub change: String,
    pub reviewer: String,
    pub reason: String,
    pub expires: Date,
    /// Scopes the entry to one spec (matched against the new document's file name or path).
    pub file: Option<String>,
    /// The rule the accepted change must have (its id or an alias); `None`: any.
    pub rule: Option<String>,
    /// The path the accepted change must have; `None`: any.
    pub path: Option<String>,
    /// 1-based line of the entry's `[[accept]]` header.
    pub line: usize,
}

impl AcceptEntry {
    /// Whether the entry still holds on `date` (valid through the end of its `expires` day).
    pub fn valid_on(&self, date: Date) -> bool {
        date <= self.expires
    }

    /// Whether the entry applies to the document named `document` (on the command line).
    pub fn applies_to(&self, document: &str) -> bool {
        match &self.file {
            None => true,
            Some(file) => {
                let document = document.rsplit_once(':').map_or(document, |(_, p)| p);
                let document = document.trim_start_matches("./");
                document == file || document.ends_with(&format!("/{file}"))
            }
        }
    }
}

/// Why an accept file was refused. Every error names the file and, where it has one, the line.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("{file}:{line}: {message}")]
    Syntax {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}:{line}: {message}")]
    Entry {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}:{line}: a second entry for {change} (the first is on line {first})")]
    Duplicate {
        file: String,
        line: usize,
        first: usize,
        change: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    accept: Vec<toml::Spanned<RawEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    change: String,
    reviewer: String,
    reason: String,
    /// A string (`"2027-01-01"`) or a TOML local date (`2027-01-01`).
    expires: toml::Value,
    file: Option<String>,
    rule: Option<String>,
    path: Option<String>,
}

/// Byte offsets where each line starts, so an offset's line is a binary search (one pass
/// over the text for the whole file, not one per entry: H34).
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    /// The 1-based line of `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset)
    }
}

/// The text of a date given as a string or as a TOML local date (no time, no offset).
fn date_text(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Datetime(dt) if dt.time.is_none() && dt.offset.is_none() => {
            dt.date.map(|d| d.to_string())
        }
        _ => None,
    }
}

fn is_lower_hex(text: &str, digits: usize) -> bool {
    text.len() == digits
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `id` is a change id: `chg2:` and 32 lowercase hex digits, or the deprecated
/// `chg1:` and 16 ([`is_deprecated_id`]).
pub fn is_change_id(id: &str) -> bool {
    id.strip_prefix("chg2:")
        .is_some_and(|hex| is_lower_hex(hex, 32))
        || is_deprecated_id(id)
}

/// Whether `id` is a 64-bit `chg1:` id (still read, with a warning: docs/ci.md).
pub fn is_deprecated_id(id: &str) -> bool {
    id.strip_prefix("chg1:")
        .is_some_and(|hex| is_lower_hex(hex, 16))
}

impl AcceptEntry {
    /// Whether the entry's `rule` and `path` pins (when it has them) hold for `change`. A pinned
    /// rule matches the change's rule by id, alias or stable id.
    pub fn pins_hold(&self, change: &crate::core::model::Change) -> bool {
        use crate::core::diff::rules::find;
        let rule_holds = self.rule.as_deref().is_none_or(|pin| {
            pin == change.rule
                || match (find(pin), find(&change.rule)) {
                    (Some(a), Some(b)) => a.stable_id == b.stable_id,
                    _ => false,
                }
        });
        rule_holds && self.path.as_deref().is_none_or(|pin| pin == change.path)
    }
}

/// Parses and checks an accept file; `date` is the check date (bounds `expires`).
pub fn parse(file: &str, text: &str, date: Date) -> Result<Vec<AcceptEntry>, AcceptError> {
    let lines = Lines::of(text);
    let raw: RawFile = toml::from_str(text).map_err(|e| AcceptError::Syntax {
        file: file.to_string(),
        line: e.span().map_or(1, |s| lines.line_of(s.start)),
        message: e.message().to_string(),
    })?;
    let mut entries: Vec<AcceptEntry> = Vec::new();
    let mut seen: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
    for spanned in raw.accept {
        let line = lines.line_of(spanned.span().start);
        let entry = spanned.into_inner();
        let bad = |message: String| AcceptError::Entry {
            file: file.to_string(),
            line,
            message,
        };
        if !is_change_id(&entry.change) {
            return Err(bad(format!(
                "change {:?} is not a change id (`chg2:` and 32 lowercase hex digits)",
                entry.change
            )));
        }
        if let Some(rule) = &entry.rule {
            if crate::core::diff::rules::find(rule).is_none() {
                return Err(bad(format!(
                    "rule {rule:?} is not a rule id (`schemawatch rules` lists them)"
                )));
            }
        }
        if entry.path.as_deref().is_some_and(str::is_empty) {
            return Err(bad("`path` is empty".into()));
        }
        for (key, value) in [("reviewer", &entry.reviewer), ("reason", &entry.reason)] {
            if value.trim().is_empty() {
                return Err(bad(format!("`{key}` is empty")));
            }
            if value.chars().any(char::is_control) {
                return Err(bad(format!("`{key}` holds a control character")));
            }
        }
        let expires = date_text(&entry.expires)
            .and_then(|text| Date::parse(&text))
            .ok_or_else(|| {
                bad(format!(
                    "expires {} is not a date (YYYY-MM-DD)",
                    entry.expires
                ))
            })?;
        if date.days_until(expires) > MAX_VALIDITY_DAYS {
            return Err(bad(format!(
                "expires {expires} is more than {MAX_VALIDITY_DAYS} days after {date}"
            )));
        }
        let key = (entry.change.clone(), entry.file.clone());
        if let Some(first) = seen.get(&key) {
            return Err(AcceptError::Duplicate {
                file: file.to_string(),
                line,
                first: *first,
                change: entry.change,
            });
        }
        seen.insert(key, line);
        entries.push(AcceptEntry {
            change: entry.change,
            reviewer: entry.reviewer,
            reason: entry.reason,
            expires,
            file: entry.file,
            rule: entry.rule,
            path: entry.path,
            line,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Date {
        Date::parse(text).unwrap()
    }

    #[test]
    fn dates_parse_round_trip_and_order() {
        for text in [
            "1970-01-01",
            "2000-02-29",
            "2026-12-01",
            "2027-12-31",
            "2400-02-29",
        ] {
            assert_eq!(day(text).to_string(), text);
        }
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "2026-1-01",
            "26-01-01",
            "2026-01-00",
            "x",
        ] {
            assert!(Date::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(day("2026-12-01").days_until(day("2027-12-02")), 366);
        assert_eq!(Date::from_unix_seconds(0), day("1970-01-01"));
        assert_eq!(Date::from_unix_seconds(1_764_633_600), day("2025-12-02"));
    }

    const ENTRY: &str = "[[accept]]\nchange = \"chg1:0123456789abcdef\"\nreviewer = \"alice\"\nreason = \"migrated\"\nexpires = \"2027-01-31\"\n";

    #[test]
    fn lines_answer_as_counting_newlines_does() {
        let text = "a\n\nbc\nd\n";
        let lines = Lines::of(text);
        for offset in 0..=text.len() + 2 {
            let counted = text[..offset.min(text.len())].matches('\n').count() + 1;
            assert_eq!(lines.line_of(offset), counted, "offset {offset}");
        }
    }

    #[test]
    fn expires_may_be_a_native_toml_date() {
        let date = day("2026-12-01");
        let native = ENTRY.replace("\"2027-01-31\"", "2027-01-31");
        let entries = parse("a.toml", &native, date).unwrap();
        assert_eq!(entries[0].expires, day("2027-01-31"));
        for (bad, needle) in [
            ("2027-01-31T10:00:00", "2027-01-31T10:00:00 is not a date"),
            ("2027-01-31T10:00:00Z", "is not a date"),
            ("10:00:00", "is not a date"),
            ("20270131", "is not a date"),
        ] {
            let text = ENTRY.replace("\"2027-01-31\"", bad);
            let error = parse("a.toml", &text, date).unwrap_err().to_string();
            assert!(error.starts_with("a.toml:1:"), "{error}");
            assert!(error.contains(needle), "{error}");
        }
    }

    #[test]
    fn an_entry_parses_with_its_line() {
        let text = format!("# accepted drift\n\n{ENTRY}");
        let entries = parse("a.toml", &text, day("2026-12-01")).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].line, 3);
        assert!(entries[0].valid_on(day("2027-01-31")));
        assert!(!entries[0].valid_on(day("2027-02-01")));
    }

    #[test]
    fn bad_entries_name_file_and_line() {
        let date = day("2026-12-01");
        for (text, needle) in [
            (
                ENTRY.replace("chg1:0123456789abcdef", "chg1:XYZ"),
                "not a change id",
            ),
            (
                ENTRY.replace("2027-01-31", "2028-01-31"),
                "more than 366 days",
            ),
            (ENTRY.replace("2027-01-31", "soon"), "not a date"),
            (ENTRY.replace("\"alice\"", "\"\""), "`reviewer` is empty"),
            (
                ENTRY.replace("\"migrated\"", "\"a\\nb\""),
                "control character",
            ),
            (format!("{ENTRY}color = \"red\"\n"), "unknown field"),
            (format!("{ENTRY}\n{ENTRY}"), "a second entry"),
        ] {
            let error = parse("a.toml", &text, date).unwrap_err().to_string();
            assert!(error.starts_with("a.toml:"), "{error}");
            assert!(error.contains(needle), "{error}");
        }
        let error = parse("a.toml", &format!("{ENTRY}\n{ENTRY}"), date)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("a.toml:7:"), "{error}");
        // The same change for two different files is two entries, not a duplicate.
        let two = format!("{ENTRY}file = \"a.yaml\"\n\n{ENTRY}file = \"b.yaml\"\n");
        assert_eq!(parse("a.toml", &two, date).unwrap().len(), 2);
    }

    #[test]
    fn file_scopes_match_paths_and_git_names() {
        let entry = AcceptEntry {
            change: "chg1:0123456789abcdef".into(),
            reviewer: "a".into(),
            reason: "b".into(),
            expires: day("2027-01-01"),
            file: Some("openapi.yaml".into()),
            rule: None,
            path: None,
            line: 1,
        };
        for yes in [
            "openapi.yaml",
            "./openapi.yaml",
            "api/openapi.yaml",
            "git:HEAD:openapi.yaml",
        ] {
            assert!(entry.applies_to(yes), "{yes}");
        }
        for no in ["other.yaml", "xopenapi.yaml"] {
            assert!(!entry.applies_to(no), "{no}");
        }
    }
}
