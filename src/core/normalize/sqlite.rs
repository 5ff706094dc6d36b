//! SQLite catalog → ToolSpec (docs/databases.md "Mapping").
//!
//! The source layer (`src/sources/sqlite.rs`) reads `sqlite_schema` and the `PRAGMA`s of a
//! database opened read-only into a [`Catalog`] document; this module turns that document into
//! the canonical model without any I/O:
//!
//! - every table is an endpoint `TABLE <name>`, every view `VIEW <name>`;
//! - the columns form an object schema used on both sides: `input_schema` is what a writer
//!   sends (generated columns left out, a column is required when it is `NOT NULL` without a
//!   default and not the rowid alias), `output_schema` is the row a reader receives (every
//!   column present, nullable unless `NOT NULL`, generated columns `readOnly`);
//! - declared types map to JSON Schema by their affinity (`INTEGER` → integer, `TEXT` → string,
//!   `REAL` / `NUMERIC` → number, `BLOB` or none → any); in a `STRICT` table the type is
//!   enforced, elsewhere the declared text (`VARCHAR(20)`) is an `info` fact;
//! - the table facts — column order, primary key, unique constraints, foreign keys, check
//!   constraints, options (`STRICT`, `WITHOUT ROWID`) and triggers — are contract, indexes and
//!   declared types are information; they sit in the endpoint's `meta` and are judged by the
//!   database rules (`src/core/diff/database.rs`).
//!
//! Object creation order never matters: everything is keyed and sorted by name.

use super::database::{check_format, contract, nullable};
use super::schema::normalize_schema_owned;
use super::NormalizeError;
use crate::core::fingerprint::digest_text;
use crate::core::model::{EndpointSpec, Kind, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The `format` of a catalog document.
pub const CATALOG_FORMAT: &str = "schemawatch.sqlite-catalog/1";

/// What the source layer reads from a database: the raw catalog, nothing normalized.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub format: String,
    /// Tables and views.
    pub relations: Vec<Relation>,
    pub triggers: Vec<Trigger>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    pub name: String,
    /// `table` or `view`.
    pub kind: String,
    /// The `CREATE` statement from `sqlite_schema`.
    pub sql: String,
    pub strict: bool,
    pub without_rowid: bool,
    /// In column order (`cid`).
    pub columns: Vec<Column>,
    pub foreign_keys: Vec<ForeignKeyRow>,
    pub indexes: Vec<Index>,
    /// Why SQLite could not read this object (an unknown virtual-table module, a view over a
    /// missing table, a circular view); the other fields but `sql` are then empty. Absent for
    /// a readable object, so readable catalogs serialize as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// One row of `PRAGMA table_xinfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    pub declared_type: String,
    pub not_null: bool,
    pub default: Option<String>,
    /// Position in the primary key (1-based), 0 when not part of it.
    pub pk: i64,
    /// 0 normal, 1 hidden (virtual tables), 2 generated virtual, 3 generated stored.
    pub hidden: i64,
}

/// One row of `PRAGMA foreign_key_list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForeignKeyRow {
    pub id: i64,
    pub seq: i64,
    pub table: String,
    pub from: String,
    /// `None` when the key refers to the parent's primary key implicitly.
    pub to: Option<String>,
    pub on_update: String,
    pub on_delete: String,
    #[serde(rename = "match")]
    pub match_: String,
}

/// One index from `PRAGMA index_list` with its key columns from `PRAGMA index_xinfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
    pub name: String,
    pub unique: bool,
    /// `c` (CREATE INDEX), `u` (UNIQUE constraint), `pk` (PRIMARY KEY).
    pub origin: String,
    pub partial: bool,
    /// Key columns in order; `<expr>` for an expression, `<rowid>` for the rowid.
    pub columns: Vec<String>,
    pub sql: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    pub name: String,
    pub table: String,
    pub sql: String,
}

/// Normalizes a catalog document (the bytes the SQLite source produced).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    let catalog: Catalog = serde_json::from_slice(bytes).map_err(|e| NormalizeError::Invalid {
        at: "sqlite catalog".into(),
        problem: e.to_string(),
    })?;
    normalize_catalog(watch, &catalog)
}

/// Normalizes a parsed catalog.
pub fn normalize_catalog(watch: &str, catalog: &Catalog) -> Result<ToolSpec, NormalizeError> {
    check_format(&catalog.format, CATALOG_FORMAT)?;
    let mut triggers: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for t in &catalog.triggers {
        triggers
            .entry(t.table.to_lowercase())
            .or_default()
            .push(trigger_fact(t));
    }
    let mut endpoints = Vec::new();
    for relation in &catalog.relations {
        endpoints.push(relation_endpoint(
            relation,
            triggers.remove(&relation.name.to_lowercase()),
        )?);
    }
    contract(watch, Kind::Sqlite, endpoints)
}

fn relation_endpoint(
    r: &Relation,
    triggers: Option<Vec<Value>>,
) -> Result<EndpointSpec, NormalizeError> {
    let is_view = match r.kind.as_str() {
        "table" => false,
        "view" => true,
        other => {
            return Err(NormalizeError::Invalid {
                at: r.name.clone(),
                problem: format!("unknown relation kind {other:?}"),
            })
        }
    };
    if let Some(reason) = &r.unreadable {
        return Ok(unreadable_endpoint(r, is_view, reason));
    }
    let pk_count = r.columns.iter().filter(|c| c.pk > 0).count();
    let mut input_props = Map::new();
    let mut input_required = Vec::new();
    let mut output_props = Map::new();
    let mut output_required = Vec::new();
    let mut order = Vec::new();
    let mut declared = Map::new();
    let mut pk: Vec<(i64, String)> = Vec::new();
    for c in r.columns.iter().filter(|c| c.hidden != 1) {
        let generated = c.hidden == 2 || c.hidden == 3;
        // An INTEGER PRIMARY KEY of a rowid table is the rowid: never NULL, assigned when omitted.
        let rowid_alias = !is_view
            && !r.without_rowid
            && pk_count == 1
            && c.pk == 1
            && c.declared_type.eq_ignore_ascii_case("INTEGER");
        // Outside STRICT and WITHOUT ROWID tables, a non-integer primary key may hold NULL.
        let non_null = c.not_null || rowid_alias || (c.pk > 0 && (r.strict || r.without_rowid));
        let base = type_schema(&c.declared_type, r.strict);
        let mut out_schema = nullable(base.clone(), non_null);
        if generated {
            out_schema["readOnly"] = json!(true);
        }
        output_props.insert(c.name.clone(), out_schema);
        output_required.push(json!(c.name));
        order.push(json!(c.name));
        if c.pk > 0 {
            pk.push((c.pk, c.name.clone()));
        }
        if !c.declared_type.is_empty() {
            declared.insert(c.name.clone(), json!(c.declared_type));
        }
        if !is_view && !generated {
            let mut in_schema = nullable(base, non_null);
            if let Some(text) = &c.default {
                in_schema["default"] = default_value(text);
            }
            if c.not_null && c.default.is_none() && !rowid_alias {
                input_required.push(json!(c.name));
            }
            input_props.insert(c.name.clone(), in_schema);
        }
    }
    pk.sort();
    let output_schema = normalize_schema_owned(object_schema(output_props, output_required, None));
    let input_schema = (!is_view).then(|| {
        normalize_schema_owned(object_schema(
            input_props,
            input_required,
            Some(json!(false)),
        ))
    });

    let mut facts = Map::new();
    facts.insert("columns".into(), Value::Array(order));
    facts.insert("declared_types".into(), Value::Object(declared));
    let mut triggers = triggers.unwrap_or_default();
    triggers.sort_by_key(|t| t["name"].as_str().unwrap_or_default().to_lowercase());
    facts.insert("triggers".into(), Value::Array(triggers));
    if is_view {
        facts.insert(
            "definition".into(),
            json!(digest_text(
                "schemawatch.sqlite.view",
                &normalize_sql(&r.sql)
            )),
        );
    } else {
        facts.insert(
            "primary_key".into(),
            json!(pk.into_iter().map(|(_, n)| n).collect::<Vec<_>>()),
        );
        facts.insert(
            "options".into(),
            json!({"strict": r.strict, "without_rowid": r.without_rowid}),
        );
        facts.insert("foreign_keys".into(), foreign_keys(&r.foreign_keys));
        let mut checks: Vec<String> = check_constraints(&r.sql);
        checks.sort();
        checks.dedup();
        facts.insert("checks".into(), json!(checks));
        let mut unique: Vec<Vec<String>> = r
            .indexes
            .iter()
            .filter(|i| i.unique && i.origin != "pk")
            .map(|i| i.columns.clone())
            .collect();
        unique.sort();
        unique.dedup();
        facts.insert("unique".into(), json!(unique));
        let mut indexes: Vec<Value> = r
            .indexes
            .iter()
            .filter(|i| i.origin == "c")
            .map(|i| {
                json!({
                    "name": i.name,
                    "columns": i.columns,
                    "unique": i.unique,
                    "partial": i.partial,
                    "definition": i.sql.as_deref().map(|s| digest_text("schemawatch.sqlite.index", &normalize_sql(s))),
                })
            })
            .collect();
        indexes.sort_by_key(|i| i["name"].as_str().unwrap_or_default().to_lowercase());
        facts.insert("indexes".into(), Value::Array(indexes));
    }

    let method = if is_view { "VIEW" } else { "TABLE" };
    Ok(EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: None,
        // A table accepts DELETE; a view (without INSTEAD OF triggers) is read-only.
        destructive: !is_view,
        idempotent: is_view,
        input_schema: input_schema.map(Box::new),
        meta: Some(Box::new(Value::Object(facts))),
        method: method.into(),
        name: r.name.clone().into(),
        open_world: false,
        operation_id: None,
        output_schema: Some(Box::new(output_schema)),
        parameters: Vec::new(),
        path: r.name.clone().into(),
        path_template: r.name.clone().into(),
        read_only: is_view,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: None,
    })
}

/// An object SQLite could not read: in the contract by name, kind, the digest of its `CREATE`
/// text and the reason, so it stays watched (a change to its text, or it becoming readable
/// again, is drift), while the rest of the database is read as usual.
fn unreadable_endpoint(r: &Relation, is_view: bool, reason: &str) -> EndpointSpec {
    let method = if is_view { "VIEW" } else { "TABLE" };
    let facts = json!({
        "unreadable": reason,
        "unreadable_definition": digest_text("schemawatch.sqlite.unreadable", &normalize_sql(&r.sql)),
    });
    EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: None,
        destructive: !is_view,
        idempotent: is_view,
        input_schema: None,
        meta: Some(Box::new(facts)),
        method: method.into(),
        name: r.name.clone().into(),
        open_world: false,
        operation_id: None,
        output_schema: None,
        parameters: Vec::new(),
        path: r.name.clone().into(),
        path_template: r.name.clone().into(),
        read_only: is_view,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: None,
    }
}

fn object_schema(
    props: Map<String, Value>,
    required: Vec<Value>,
    additional: Option<Value>,
) -> Value {
    let mut required = required;
    required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    let mut s = json!({"type": "object", "properties": props, "required": required});
    if let Some(a) = additional {
        s["additionalProperties"] = a;
    }
    s
}

/// The JSON Schema of a declared type: its affinity (SQLite "Datatypes" §3.1), or in a
/// `STRICT` table the enforced type.
pub fn type_schema(declared: &str, strict: bool) -> Value {
    let upper = declared.to_ascii_uppercase();
    if strict {
        return match upper.as_str() {
            "INT" | "INTEGER" => json!({"type": "integer"}),
            "REAL" => json!({"type": "number"}),
            "TEXT" => json!({"type": "string"}),
            "BLOB" => json!({"type": "string", "format": "binary"}),
            _ => json!({}),
        };
    }
    if upper.contains("INT") {
        json!({"type": "integer"})
    } else if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") {
        json!({"type": "string"})
    } else if upper.contains("BLOB") || upper.is_empty() {
        json!({})
    } else {
        // REAL, FLOA, DOUB and NUMERIC affinity.
        json!({"type": "number"})
    }
}

/// A column default as JSON: a literal as its value, an expression as `{"sql": text}`.
fn default_value(text: &str) -> Value {
    let t = text.trim();
    if t.eq_ignore_ascii_case("NULL") {
        return Value::Null;
    }
    if let Some(inner) = t.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        if !inner.replace("''", "").contains('\'') {
            return json!(inner.replace("''", "'"));
        }
    }
    let numeric = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !numeric.is_empty()
        && numeric.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && numeric.bytes().filter(|b| *b == b'.').count() <= 1
        && !numeric.starts_with('.')
        && !numeric.ends_with('.')
    {
        if let Ok(v) = serde_json::from_str::<Value>(t.strip_prefix('+').unwrap_or(t)) {
            return v;
        }
    }
    json!({"sql": normalize_sql(t)})
}

fn foreign_keys(rows: &[ForeignKeyRow]) -> Value {
    let mut by_id: BTreeMap<i64, Vec<&ForeignKeyRow>> = BTreeMap::new();
    for row in rows {
        by_id.entry(row.id).or_default().push(row);
    }
    let mut keys: Vec<Value> = by_id
        .into_values()
        .map(|mut parts| {
            parts.sort_by_key(|p| p.seq);
            let first = parts[0];
            json!({
                "columns": parts.iter().map(|p| p.from.clone()).collect::<Vec<_>>(),
                "references": {
                    "table": first.table,
                    "columns": parts.iter().map(|p| p.to.clone()).collect::<Vec<_>>(),
                },
                "on_update": first.on_update,
                "on_delete": first.on_delete,
                "match": first.match_,
            })
        })
        .collect();
    keys.sort_by_key(crate::core::json::to_canonical_string);
    Value::Array(keys)
}

fn trigger_fact(t: &Trigger) -> Value {
    let words = sql_words(&t.sql);
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let on = upper.iter().position(|w| w == "ON").unwrap_or(upper.len());
    let head = &upper[..on];
    let timing = if head.iter().any(|w| w == "INSTEAD") {
        "INSTEAD OF"
    } else if head.iter().any(|w| w == "AFTER") {
        "AFTER"
    } else {
        "BEFORE"
    };
    let event = head
        .iter()
        .find(|w| matches!(w.as_str(), "INSERT" | "UPDATE" | "DELETE"))
        .cloned()
        .unwrap_or_default();
    json!({
        "name": t.name,
        "timing": timing,
        "event": event,
        "definition": digest_text("schemawatch.sqlite.trigger", &normalize_sql(&t.sql)),
    })
}

/// SQL text with comments dropped and whitespace runs outside literals collapsed to one space.
pub fn normalize_sql(sql: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    let mut pending_space = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            pending_space = true;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            pending_space = true;
            continue;
        }
        if c.is_whitespace() {
            pending_space = true;
            i += 1;
            continue;
        }
        if pending_space && !out.is_empty() {
            out.push(' ');
        }
        pending_space = false;
        if matches!(c, '\'' | '"' | '`' | '[') {
            let close = if c == '[' { ']' } else { c };
            out.push(c);
            i += 1;
            while i < chars.len() {
                out.push(chars[i]);
                if chars[i] == close {
                    // A doubled quote is an escaped one.
                    if close != ']' && chars.get(i + 1) == Some(&close) {
                        out.push(close);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                i += 1;
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Words and punctuation of normalized SQL, literals kept whole.
fn sql_words(sql: &str) -> Vec<String> {
    let text = normalize_sql(sql);
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        if let Some(q) = quote {
            current.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' | '`' => {
                current.push(c);
                quote = Some(c);
            }
            '[' => {
                current.push(c);
                quote = Some(']');
            }
            c if c.is_whitespace() => {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
            }
            '(' | ')' | ',' | ';' => {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                words.push(c.to_string());
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The expressions of every `CHECK (…)` in a `CREATE TABLE` statement, normalized.
pub fn check_constraints(sql: &str) -> Vec<String> {
    let words = sql_words(sql);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i].eq_ignore_ascii_case("CHECK")
            && words.get(i + 1).map(String::as_str) == Some("(")
        {
            let mut depth = 0usize;
            let mut expr: Vec<&str> = Vec::new();
            let mut j = i + 1;
            while j < words.len() {
                let w = words[j].as_str();
                if w == "(" {
                    depth += 1;
                    if depth == 1 {
                        j += 1;
                        continue;
                    }
                } else if w == ")" {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                expr.push(w);
                j += 1;
            }
            out.push(join_words(&expr));
            i = j;
        }
        i += 1;
    }
    out
}

fn join_words(words: &[&str]) -> String {
    let mut out = String::new();
    for w in words {
        let tight = matches!(*w, ")" | "," | "(") || out.ends_with('(') || out.is_empty();
        if !tight {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_found_and_normalized() {
        let sql = "CREATE TABLE t (a INT CHECK (a >  0), b TEXT,\n CONSTRAINT len CHECK(length(b) <= 20), c TEXT DEFAULT 'check (x)')";
        assert_eq!(
            check_constraints(sql),
            vec!["a > 0".to_string(), "length(b) <= 20".to_string()]
        );
    }

    #[test]
    fn affinities_and_defaults() {
        assert_eq!(type_schema("VARCHAR(20)", false), json!({"type": "string"}));
        assert_eq!(type_schema("BIGINT", false), json!({"type": "integer"}));
        assert_eq!(type_schema("DOUBLE", false), json!({"type": "number"}));
        assert_eq!(type_schema("", false), json!({}));
        assert_eq!(default_value("'it''s'"), json!("it's"));
        assert_eq!(default_value("42"), json!(42));
        assert_eq!(default_value("NULL"), Value::Null);
        assert_eq!(
            default_value("CURRENT_TIMESTAMP"),
            json!({"sql": "CURRENT_TIMESTAMP"})
        );
    }

    #[test]
    fn trigger_facts() {
        let t = Trigger {
            name: "audit".into(),
            table: "users".into(),
            sql: "CREATE TRIGGER audit AFTER UPDATE OF name ON users BEGIN SELECT 1; END".into(),
        };
        let f = trigger_fact(&t);
        assert_eq!(f["timing"], "AFTER");
        assert_eq!(f["event"], "UPDATE");
    }
}
