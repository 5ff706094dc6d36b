//! The completeness harness (issue "Nothing unseen"): given a rich document of a kind, mutate
//! every position one at a time (change each scalar, drop each object key and each array
//! element), classify the base against each mutant, and require that no mutant is `identical`
//! unless its position is on that kind's descriptive allow-list. It prints counts per outcome,
//! and fails when the fixture lacks a keyword of the kind's object model (a checked-in list per
//! kind) or when more than 10% of the mutants do not normalize.
//!
//! One module for every kind; adapters turn a document into positions and back: JSON (and
//! YAML, read into the same value model and written back as JSON, which is YAML), XML (drop
//! each element and attribute, change each attribute value) and GraphQL SDL (drop or rename
//! each field, argument, enum value, directive and directive argument, change each value
//! literal, grow or drop each definition).

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
                if !REQUIRED_KEYS.contains(&key.as_str()) {
                    out.push((path.clone(), "drop key", replace_at(root, path, None)));
                }
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

/// One mutant: where (its allow-list pattern and a readable location), what was done, and the
/// document bytes.
pub struct Mutant {
    pub pattern: String,
    pub location: String,
    pub what: &'static str,
    pub bytes: Vec<u8>,
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
    let mut present = BTreeSet::new();
    keys_of(doc, &mut present);
    let mutants = json_mutants(doc)
        .into_iter()
        .map(|(path, what, mutant)| Mutant {
            pattern: pattern(&path),
            location: pointer(&path),
            what,
            bytes: serde_json::to_vec(&mutant).unwrap_or_default(),
        })
        .collect();
    let base = serde_json::to_vec(doc).expect("serializable");
    run(kind, &base, &present, keywords, mutants, allowed)
}

/// The YAML adapter: the document is read into the JSON value model (the normalizers read
/// YAML the same way) and each mutant is written as JSON, which every YAML reader accepts.
pub fn run_yaml(
    kind: Kind,
    text: &str,
    keywords: &[String],
    allowed: &dyn Fn(&str) -> bool,
) -> Summary {
    let doc = schemawatch::core::json::parse_document(text.as_bytes()).expect("fixture YAML");
    // The base is the YAML text itself, so the YAML reading is what the mutants are compared to.
    let mut present = BTreeSet::new();
    keys_of(&doc, &mut present);
    let mutants = json_mutants(&doc)
        .into_iter()
        .map(|(path, what, mutant)| Mutant {
            pattern: pattern(&path),
            location: pointer(&path),
            what,
            bytes: serde_json::to_vec(&mutant).unwrap_or_default(),
        })
        .collect();
    run(kind, text.as_bytes(), &present, keywords, mutants, allowed)
}

/// Attributes CSDL requires on the elements that carry them (identity and references).
const REQUIRED_XML_ATTRIBUTES: &[&str] = &[
    "Name",
    "Type",
    "Term",
    "Target",
    "Namespace",
    "EntityType",
    "Path",
    "UnderlyingType",
];

/// Object keys every format here requires where they occur (identity, version, references):
/// they are changed, not dropped.
const REQUIRED_KEYS: &[&str] = &[
    "name", "in", "$ref", "openrpc", "openapi", "swagger", "code",
];

/// The XML adapter: drop each element (but the root), drop each attribute, change each
/// attribute's value. Patterns are element paths by local name (`Schema/EntityType/Property`,
/// `Schema/EntityType/Property/@Name`).
pub fn run_xml(
    kind: Kind,
    text: &str,
    keywords: &[String],
    allowed: &dyn Fn(&str) -> bool,
) -> Summary {
    let doc = roxmltree::Document::parse(text).expect("fixture XML");
    let mut present = BTreeSet::new();
    let mut mutants = Vec::new();
    let splice = |range: std::ops::Range<usize>, with: &str| {
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..range.start]);
        out.push_str(with);
        out.push_str(&text[range.end..]);
        out.into_bytes()
    };
    for node in doc.descendants().filter(|n| n.is_element()) {
        present.insert(node.tag_name().name().to_string());
        let mut names: Vec<&str> = node
            .ancestors()
            .filter(|a| a.is_element())
            .map(|a| a.tag_name().name())
            .collect();
        names.reverse();
        let path = names.join("/");
        let label = |extra: &str| {
            let name = node
                .attribute("Name")
                .map(|n| format!("[{n}]"))
                .unwrap_or_default();
            format!("{}{name}{extra}", names.join("/"))
        };
        if node.parent_element().is_some() && node.tag_name().name() != "DataServices" {
            mutants.push(Mutant {
                pattern: path.clone(),
                location: label(""),
                what: "drop element",
                bytes: splice(node.range(), ""),
            });
        }
        for a in node.attributes() {
            present.insert(a.name().to_string());
            let at = format!("{path}/@{}", a.name());
            // Identity attributes the format requires are changed, not dropped (a document
            // without them is refused, which says nothing about what the model misses).
            if !REQUIRED_XML_ATTRIBUTES.contains(&a.name()) {
                mutants.push(Mutant {
                    pattern: at.clone(),
                    location: label(&format!("/@{}", a.name())),
                    what: "drop attribute",
                    bytes: splice(a.range(), ""),
                });
            }
            let changed = match a.value() {
                "true" => "false".to_string(),
                "false" => "true".to_string(),
                v => match v.parse::<i64>() {
                    Ok(n) => (n + 1).to_string(),
                    Err(_) => format!("{v}Mutated"),
                },
            };
            mutants.push(Mutant {
                pattern: at,
                location: label(&format!("/@{}", a.name())),
                what: "change attribute",
                bytes: splice(a.range_value(), &changed),
            });
        }
    }
    run(kind, text.as_bytes(), &present, keywords, mutants, allowed)
}

/// The GraphQL SDL adapter: for each field, argument (and input field), enum value, applied
/// directive and directive argument: drop it and rename it; for each value literal: change it;
/// for each definition: grow it (a new field or value) or, when it has no body, drop it.
/// Patterns are the syntax kind (`FIELD_DEFINITION`, `DIRECTIVE`, ...).
pub fn run_sdl(
    kind: Kind,
    text: &str,
    keywords: &[String],
    allowed: &dyn Fn(&str) -> bool,
) -> Summary {
    use apollo_parser::cst::CstNode;
    use apollo_parser::{Parser, SyntaxKind as K};
    let tree = Parser::new(text).parse();
    assert_eq!(tree.errors().count(), 0, "the fixture parses");
    let mut present = BTreeSet::new();
    let mut mutants = Vec::new();
    let splice = |start: usize, end: usize, with: &str| {
        let mut out = String::with_capacity(text.len() + with.len());
        out.push_str(&text[..start]);
        out.push_str(with);
        out.push_str(&text[end..]);
        out.into_bytes()
    };
    for token in tree.document().syntax().descendants_with_tokens() {
        if let Some(t) = token.as_token() {
            let word = t.text();
            if t.kind() != K::IDENT && t.kind() != K::STRING_VALUE && t.kind() != K::INT {
                present.insert(word.to_string());
            }
        }
    }
    for node in tree.document().syntax().descendants() {
        let range = node.text_range();
        let (start, end) = (usize::from(range.start()), usize::from(range.end()));
        let source = &text[start..end];
        let kind_name = format!("{:?}", node.kind());
        let location = format!("{kind_name} {:?}", source.lines().next().unwrap_or(""));
        if node.kind() == K::DIRECTIVE {
            if let Some(name) = node.children().find(|c| c.kind() == K::NAME) {
                present.insert(format!("@{}", name.text()));
            }
        }
        let name_range = node.children().find(|c| c.kind() == K::NAME).map(|n| {
            let r = n.text_range();
            (usize::from(r.start()), usize::from(r.end()))
        });
        match node.kind() {
            K::FIELD_DEFINITION
            | K::INPUT_VALUE_DEFINITION
            | K::ENUM_VALUE_DEFINITION
            | K::DIRECTIVE
            | K::ARGUMENT => {
                // The last member of a list cannot go (`()` and `{}` do not parse).
                let siblings = node
                    .parent()
                    .map(|p| p.children().filter(|c| c.kind() == node.kind()).count())
                    .unwrap_or(0);
                if siblings > 1 || node.kind() == K::DIRECTIVE {
                    mutants.push(Mutant {
                        pattern: kind_name.clone(),
                        location: location.clone(),
                        what: "drop",
                        bytes: splice(start, end, ""),
                    });
                }
                let rename = match node.kind() {
                    K::ENUM_VALUE_DEFINITION => {
                        node.descendants().find(|c| c.kind() == K::NAME).map(|n| {
                            let r = n.text_range();
                            (usize::from(r.start()), usize::from(r.end()))
                        })
                    }
                    _ => name_range,
                };
                if let Some((s, e)) = rename {
                    mutants.push(Mutant {
                        pattern: kind_name.clone(),
                        location: location.clone(),
                        what: "rename",
                        bytes: splice(s, e, &format!("{}Mutated", &text[s..e])),
                    });
                }
            }
            K::STRING_VALUE | K::INT_VALUE | K::BOOLEAN_VALUE | K::ENUM_VALUE => {
                // Enum values inside an enum definition are renamed above.
                if node
                    .parent()
                    .is_some_and(|p| p.kind() == K::ENUM_VALUE_DEFINITION)
                {
                    continue;
                }
                let changed = match node.kind() {
                    K::INT_VALUE => source
                        .parse::<i64>()
                        .map(|n| (n + 1).to_string())
                        .unwrap_or_default(),
                    K::BOOLEAN_VALUE if source == "true" => "false".into(),
                    K::BOOLEAN_VALUE => "true".into(),
                    K::STRING_VALUE if source.starts_with("\"\"\"") => {
                        source.replacen("\"\"\"", "\"\"\"mutated ", 1)
                    }
                    K::STRING_VALUE => source.replacen('"', "\"mutated ", 1),
                    _ => format!("{source}_MUTATED"),
                };
                mutants.push(Mutant {
                    pattern: kind_name.clone(),
                    location,
                    what: "change value",
                    bytes: splice(start, end, &changed),
                });
            }
            K::OBJECT_TYPE_DEFINITION
            | K::INTERFACE_TYPE_DEFINITION
            | K::INPUT_OBJECT_TYPE_DEFINITION
            | K::OBJECT_TYPE_EXTENSION => {
                if let Some(brace) = source.find('{') {
                    mutants.push(Mutant {
                        pattern: kind_name.clone(),
                        location,
                        what: "grow",
                        bytes: splice(
                            start + brace + 1,
                            start + brace + 1,
                            " mutatedField: String ",
                        ),
                    });
                }
            }
            K::ENUM_TYPE_DEFINITION => {
                if let Some(brace) = source.find('{') {
                    mutants.push(Mutant {
                        pattern: kind_name.clone(),
                        location,
                        what: "grow",
                        bytes: splice(start + brace + 1, start + brace + 1, " MUTATED "),
                    });
                }
            }
            K::UNION_TYPE_DEFINITION
            | K::SCALAR_TYPE_DEFINITION
            | K::DIRECTIVE_DEFINITION
            | K::SCHEMA_DEFINITION
            | K::DESCRIPTION => {
                mutants.push(Mutant {
                    pattern: kind_name.clone(),
                    location,
                    what: "drop",
                    bytes: splice(start, end, ""),
                });
            }
            _ => {}
        }
    }
    run(kind, text.as_bytes(), &present, keywords, mutants, allowed)
}

/// Classifies the base against every mutant and counts the outcomes.
pub fn run(
    kind: Kind,
    base: &[u8],
    present: &BTreeSet<String>,
    keywords: &[String],
    mutants: Vec<Mutant>,
    allowed: &dyn Fn(&str) -> bool,
) -> Summary {
    let normalized =
        |bytes: &[u8]| -> Option<ToolSpec> { normalize(kind, "harness.doc", bytes).ok() };
    let base = normalized(base).expect("the fixture normalizes");
    let missing_keywords = keywords
        .iter()
        .filter(|k| !present.contains(*k))
        .cloned()
        .collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut unseen = Vec::new();
    let mut rejected = 0;
    for m in &mutants {
        let outcome = match normalized(&m.bytes) {
            None => {
                let why = normalize(kind, "harness.doc", &m.bytes)
                    .err()
                    .map(|e| e.to_string());
                println!(
                    "  rejected: {} at {}: {}",
                    m.what,
                    m.location,
                    why.unwrap_or_default()
                );
                Outcome::Rejected
            }
            Some(spec) => match classify(&base, &spec, &Default::default()).compatibility {
                Compatibility::Identical if allowed(&m.pattern) => Outcome::Allowed,
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
            Outcome::Unseen => unseen.push(format!("  {} at {}", m.what, m.location)),
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
