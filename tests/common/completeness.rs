//! The completeness harness (issue "Nothing unseen"): given a rich document of a kind, mutate
//! every position one at a time (change each scalar, drop each object key and each array
//! element), classify the base against each mutant, and require that no mutant is `identical`
//! unless its position is on that kind's descriptive allow-list. It prints counts per outcome,
//! and fails when the fixture lacks a keyword of the kind's object model (a checked-in list per
//! kind) or when more than 10% of the mutants do not normalize.
//!
//! One module for every kind; adapters turn a document into positions and back. The JSON
//! adapter is here now (YAML documents reach it through the same value model); XML and
//! GraphQL SDL adapters come with part 2.

use schemawatch::core::diff::classify;
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::normalize::normalize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One step of a position: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A position, as the allow-list writes it: `resources[].size`, `serverInfo.name`.
pub fn pattern(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(_) => out.push_str("[]"),
        }
    }
    out
}

/// A position as a JSON pointer, for messages.
pub fn pointer(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => format!("/{i}"),
        })
        .collect()
}

/// How one mutant came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Classified, and not identical.
    Noticed(Compatibility),
    /// Identical, and the position is on the allow-list.
    Allowed,
    /// Identical outside the allow-list: a change nothing would ever see.
    Unseen,
    /// The mutant does not normalize (the change is refused, not missed).
    Rejected,
}

/// The JSON adapter: every mutant of `doc`, one position at a time, with what was done.
pub fn json_mutants(doc: &Value) -> Vec<(Vec<Step>, &'static str, Value)> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(doc, doc, &mut path, &mut out);
    out
}

fn replace_at(root: &Value, path: &[Step], with: Option<Value>) -> Value {
    let mut copy = root.clone();
    let (last, parents) = match path.split_last() {
        Some(split) => split,
        None => return with.unwrap_or(Value::Null),
    };
    let mut cur = &mut copy;
    for step in parents {
        cur = match step {
            Step::Key(k) => &mut cur[k.as_str()],
            Step::Index(i) => &mut cur[*i],
        };
    }
    match (last, with) {
        (Step::Key(k), Some(v)) => cur[k.as_str()] = v,
        (Step::Index(i), Some(v)) => cur[*i] = v,
        (Step::Key(k), None) => {
            if let Value::Object(map) = cur {
                map.remove(k);
            }
        }
        (Step::Index(i), None) => {
            if let Value::Array(items) = cur {
                items.remove(*i);
            }
        }
    }
    copy
}

fn walk(
    root: &Value,
    value: &Value,
    path: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, &'static str, Value)>,
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                path.push(Step::Key(key.clone()));
                out.push((path.clone(), "drop key", replace_at(root, path, None)));
                walk(root, child, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(Step::Index(i));
                out.push((path.clone(), "drop element", replace_at(root, path, None)));
                walk(root, child, path, out);
                path.pop();
            }
        }
        scalar => {
            let changed = match scalar {
                Value::String(s) => Value::String(format!("{s}-mutated")),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => Value::from(i + 1),
                    None => Value::from(n.as_f64().unwrap_or(0.0) + 0.25),
                },
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::String("mutated".into()),
            };
            out.push((
                path.clone(),
                "change scalar",
                replace_at(root, path, Some(changed)),
            ));
        }
    }
}

/// Every key that occurs anywhere in `doc`.
fn keys_of(doc: &Value, out: &mut BTreeSet<String>) {
    match doc {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                keys_of(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys_of(v, out)),
        _ => {}
    }
}

/// The keywords of a checked-in list (one per line, `#` comments).
pub fn keyword_list(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// What a run found.
pub struct Summary {
    pub counts: BTreeMap<String, usize>,
    pub unseen: Vec<String>,
    pub missing_keywords: Vec<String>,
    pub rejected: usize,
    pub total: usize,
}

impl Summary {
    /// Panics with the problems: a keyword the fixture lacks, an unseen mutant, more than 10%
    /// of mutants rejected.
    pub fn assert_complete(&self, kind: Kind) {
        assert!(
            self.missing_keywords.is_empty(),
            "{kind}: the fixture lacks keywords of the object model: {:?}",
            self.missing_keywords
        );
        assert!(
            self.unseen.is_empty(),
            "{kind}: {} mutants are identical outside the allow-list:\n{}",
            self.unseen.len(),
            self.unseen.join("\n")
        );
        assert!(
            self.rejected * 10 <= self.total,
            "{kind}: {} of {} mutants do not normalize (more than 10%)",
            self.rejected,
            self.total
        );
    }
}

/// Mutates every position of `doc` (JSON adapter), classifies each mutant against `doc` as
/// `kind`, and counts the outcomes; `allowed(pattern)` says whether a position is on the
/// kind's descriptive allow-list.
pub fn run_json(
    kind: Kind,
    doc: &Value,
    keywords: &[String],
    allowed: &dyn Fn(&str) -> bool,
) -> Summary {
    let normalized = |v: &Value| -> Option<ToolSpec> {
        let bytes = serde_json::to_vec(v).ok()?;
        normalize(kind, "harness.doc", &bytes).ok()
    };
    let base = normalized(doc).expect("the fixture normalizes");
    let mut present = BTreeSet::new();
    keys_of(doc, &mut present);
    let missing_keywords = keywords
        .iter()
        .filter(|k| !present.contains(*k))
        .cloned()
        .collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut unseen = Vec::new();
    let mut rejected = 0;
    let mutants = json_mutants(doc);
    for (path, what, mutant) in &mutants {
        let outcome = match normalized(mutant) {
            None => Outcome::Rejected,
            Some(spec) => match classify(&base, &spec, &Default::default()).compatibility {
                Compatibility::Identical if allowed(&pattern(path)) => Outcome::Allowed,
                Compatibility::Identical => Outcome::Unseen,
                other => Outcome::Noticed(other),
            },
        };
        let label = match outcome {
            Outcome::Noticed(c) => format!("noticed: {}", c.as_str()),
            Outcome::Allowed => "identical: on the allow-list".into(),
            Outcome::Unseen => "identical: UNSEEN".into(),
            Outcome::Rejected => "rejected: does not normalize".into(),
        };
        *counts.entry(label).or_default() += 1;
        match outcome {
            Outcome::Unseen => unseen.push(format!("  {what} at {}", pointer(path))),
            Outcome::Rejected => rejected += 1,
            _ => {}
        }
    }
    println!("completeness {kind}: {} mutants", mutants.len());
    for (label, n) in &counts {
        println!("  {label}: {n}");
    }
    Summary {
        counts,
        unseen,
        missing_keywords,
        rejected,
        total: mutants.len(),
    }
}
