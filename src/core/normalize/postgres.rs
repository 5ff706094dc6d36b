//! PostgreSQL catalog → ToolSpec (docs/databases.md "PostgreSQL").
//!
//! The source layer (`src/sources/postgres.rs`) reads `pg_catalog` in a read-only transaction
//! into a [`Catalog`] document; this module maps it without I/O, like the SQLite one:
//!
//! - tables (also partitioned and foreign) are `TABLE schema.name`, views and materialized
//!   views `VIEW schema.name`; columns form an object schema on both sides (identity
//!   `ALWAYS` and generated columns are not writable; `NOT NULL` without a default or identity
//!   is required on the write side); types map to JSON Schema (integer widths as bounds,
//!   `varchar(n)` as `maxLength`, formats for uuid / date / time / timestamp, enums as `enum`,
//!   domains resolved to their base type, arrays as `items`);
//! - table facts in `meta`: column order, declared types (enforced: a type change the JSON
//!   Schema does not show is breaking), constraints by definition text (primary key, unique and
//!   exclusion, foreign keys, checks), indexes (info), triggers, row-level security and every
//!   policy, privileges granted to roles other than the owner;
//! - functions and procedures are `FUNCTION` / `PROCEDURE schema.name(identity arguments)` with
//!   their result, volatility (`VOLATILE` writes; `STABLE` / `IMMUTABLE` are read-only),
//!   `SECURITY DEFINER`, a digest of language and body, and privileges.
//!
//! OIDs and creation order never appear: everything is keyed and sorted by name or text.

use super::database::{check_format, contract, nullable};
use super::schema::normalize_schema_owned;
use super::sqlite::normalize_sql;
use super::NormalizeError;
use crate::core::fingerprint::digest_text;
use crate::core::model::{EndpointSpec, Kind, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The `format` of a catalog document.
pub const CATALOG_FORMAT: &str = "schemawatch.postgres-catalog/1";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub format: String,
    pub relations: Vec<Relation>,
    pub functions: Vec<Function>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// A role name, or `PUBLIC`.
    pub grantee: String,
    pub privilege: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    pub schema: String,
    pub name: String,
    /// `pg_class.relkind`: `r`, `p`, `f` (tables), `v`, `m` (views).
    pub kind: String,
    pub row_security: bool,
    pub force_row_security: bool,
    /// Privileges granted to roles other than the owner.
    pub privileges: Vec<Grant>,
    /// A view's query (`pg_get_viewdef`).
    pub definition: Option<String>,
    /// In `attnum` order.
    pub columns: Vec<Column>,
    pub constraints: Vec<Constraint>,
    pub indexes: Vec<Index>,
    pub triggers: Vec<Trigger>,
    pub policies: Vec<Policy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    /// `format_type(atttypid, atttypmod)`.
    pub type_name: String,
    pub not_null: bool,
    pub default: Option<String>,
    /// `attidentity`: empty, `a` (ALWAYS) or `d` (BY DEFAULT).
    pub identity: String,
    /// `attgenerated`: empty or `s` (stored).
    pub generated: String,
    /// The labels of an enum type (or of an array's enum element type), in sort order.
    pub enum_values: Option<Vec<String>>,
    /// The base type of a domain.
    pub domain_base: Option<String>,
    pub domain_not_null: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraint {
    pub name: String,
    /// `p`, `u`, `f`, `c`, `x`.
    pub kind: String,
    /// `pg_get_constraintdef`.
    pub definition: String,
    pub columns: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
    pub name: String,
    pub definition: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    pub name: String,
    /// `pg_get_triggerdef`: timing, events, level, function.
    pub definition: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    /// `r` SELECT, `a` INSERT, `w` UPDATE, `d` DELETE, `*` ALL.
    pub command: String,
    pub permissive: bool,
    pub roles: Vec<String>,
    pub using: Option<String>,
    pub with_check: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Function {
    pub schema: String,
    pub name: String,
    /// `f` function, `p` procedure.
    pub kind: String,
    /// `pg_get_function_identity_arguments`.
    pub arguments: String,
    /// `pg_get_function_result` (none for a procedure).
    pub result: Option<String>,
    /// `i`, `s`, `v`.
    pub volatility: String,
    pub security_definer: bool,
    pub language: String,
    pub body: String,
    pub privileges: Vec<Grant>,
}

/// Normalizes a catalog document (the bytes the PostgreSQL source produced).
pub fn normalize(watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    let catalog: Catalog = serde_json::from_slice(bytes).map_err(|e| NormalizeError::Invalid {
        at: "postgres catalog".into(),
        problem: e.to_string(),
    })?;
    normalize_catalog(watch, &catalog)
}

pub fn normalize_catalog(watch: &str, catalog: &Catalog) -> Result<ToolSpec, NormalizeError> {
    check_format(&catalog.format, CATALOG_FORMAT)?;
    let mut endpoints = Vec::new();
    for r in &catalog.relations {
        endpoints.push(relation_endpoint(r)?);
    }
    for f in &catalog.functions {
        endpoints.push(function_endpoint(f)?);
    }
    contract(watch, Kind::Postgres, endpoints)
}

fn grants(list: &[Grant]) -> Value {
    let set: BTreeSet<String> = list
        .iter()
        .map(|g| format!("{}:{}", g.grantee, g.privilege))
        .collect();
    json!(set)
}

fn sorted_texts<'a>(items: impl Iterator<Item = &'a str>) -> Value {
    let set: BTreeSet<String> = items.map(normalize_sql).collect();
    json!(set)
}

fn relation_endpoint(r: &Relation) -> Result<EndpointSpec, NormalizeError> {
    let is_view = match r.kind.as_str() {
        "r" | "p" | "f" => false,
        "v" | "m" => true,
        other => {
            return Err(NormalizeError::Invalid {
                at: format!("{}.{}", r.schema, r.name),
                problem: format!("unknown relation kind {other:?}"),
            })
        }
    };
    let full = format!("{}.{}", r.schema, r.name);
    let mut input_props = Map::new();
    let mut input_required = Vec::new();
    let mut output_props = Map::new();
    let mut output_required = Vec::new();
    let mut order = Vec::new();
    let mut declared = Map::new();
    for c in &r.columns {
        let base = column_type(c);
        let non_null = c.not_null || c.domain_not_null;
        let read_only = c.identity == "a" || !c.generated.is_empty();
        let mut out = nullable(base.clone(), non_null);
        if read_only {
            out["readOnly"] = json!(true);
        }
        output_props.insert(c.name.clone(), out);
        output_required.push(json!(c.name));
        order.push(json!(c.name));
        declared.insert(c.name.clone(), json!(c.type_name));
        if !is_view && !read_only {
            let mut input = nullable(base, non_null);
            if let Some(d) = &c.default {
                input["default"] = json!({"sql": normalize_sql(d)});
            }
            if non_null && c.default.is_none() && c.identity.is_empty() {
                input_required.push(json!(c.name));
            }
            input_props.insert(c.name.clone(), input);
        }
    }
    let mut facts = Map::new();
    facts.insert("columns".into(), Value::Array(order));
    facts.insert("declared_types".into(), Value::Object(declared));
    facts.insert("privileges".into(), grants(&r.privileges));
    let triggers: Vec<Value> = {
        let mut t: Vec<&Trigger> = r.triggers.iter().collect();
        t.sort_by(|a, b| a.name.cmp(&b.name));
        t.iter()
            .map(|t| {
                json!({"name": t.name, "definition": digest_text("schemawatch.postgres.trigger", &normalize_sql(&t.definition))})
            })
            .collect()
    };
    facts.insert("triggers".into(), Value::Array(triggers));
    if is_view {
        facts.insert(
            "definition".into(),
            json!(digest_text(
                "schemawatch.postgres.view",
                &normalize_sql(r.definition.as_deref().unwrap_or_default())
            )),
        );
    } else {
        let of = |kinds: &[&str]| {
            sorted_texts(
                r.constraints
                    .iter()
                    .filter(|c| kinds.contains(&c.kind.as_str()))
                    .map(|c| c.definition.as_str()),
            )
        };
        let pk: Vec<&String> = r
            .constraints
            .iter()
            .filter(|c| c.kind == "p")
            .flat_map(|c| c.columns.iter())
            .collect();
        facts.insert("primary_key".into(), json!(pk));
        facts.insert("unique".into(), of(&["u", "x"]));
        facts.insert("foreign_keys".into(), of(&["f"]));
        facts.insert("checks".into(), of(&["c"]));
        let mut indexes: Vec<Value> = r
            .indexes
            .iter()
            .map(|i| json!({"name": i.name, "definition": digest_text("schemawatch.postgres.index", &normalize_sql(&i.definition))}))
            .collect();
        indexes.sort_by_key(|i| i["name"].as_str().unwrap_or_default().to_string());
        facts.insert("indexes".into(), Value::Array(indexes));
        facts.insert(
            "row_security".into(),
            json!({"enabled": r.row_security, "forced": r.force_row_security}),
        );
        let mut policies: Vec<Value> = r
            .policies
            .iter()
            .map(|p| {
                let mut roles = p.roles.clone();
                roles.sort();
                json!({
                    "name": p.name,
                    "command": p.command,
                    "permissive": p.permissive,
                    "roles": roles,
                    "using": p.using.as_deref().map(normalize_sql),
                    "with_check": p.with_check.as_deref().map(normalize_sql),
                })
            })
            .collect();
        policies.sort_by_key(|p| p["name"].as_str().unwrap_or_default().to_string());
        facts.insert("policies".into(), Value::Array(policies));
    }
    let object = |props: Map<String, Value>, mut required: Vec<Value>, closed: bool| {
        required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        let mut s = json!({"type": "object", "properties": props, "required": required});
        if closed {
            s["additionalProperties"] = json!(false);
        }
        s
    };
    Ok(EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: None,
        destructive: !is_view,
        idempotent: is_view,
        input_schema: (!is_view).then(|| {
            Box::new(normalize_schema_owned(object(
                input_props,
                input_required,
                true,
            )))
        }),
        meta: Some(Box::new(Value::Object(facts))),
        method: if is_view { "VIEW" } else { "TABLE" }.into(),
        name: full.clone().into(),
        open_world: false,
        operation_id: None,
        output_schema: Some(Box::new(normalize_schema_owned(object(
            output_props,
            output_required,
            false,
        )))),
        parameters: Vec::new(),
        path: full.clone().into(),
        path_template: full.into(),
        read_only: is_view,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: None,
    })
}

fn function_endpoint(f: &Function) -> Result<EndpointSpec, NormalizeError> {
    let method = match f.kind.as_str() {
        "f" => "FUNCTION",
        "p" => "PROCEDURE",
        other => {
            return Err(NormalizeError::Invalid {
                at: format!("{}.{}", f.schema, f.name),
                problem: format!("unknown routine kind {other:?}"),
            })
        }
    };
    let id = format!("{}.{}({})", f.schema, f.name, f.arguments);
    let read_only = method == "FUNCTION" && matches!(f.volatility.as_str(), "s" | "i");
    let body = digest_text(
        "schemawatch.postgres.function",
        &format!("{}\0{}", f.language, f.body),
    );
    let facts = json!({
        "result": f.result,
        "volatility": f.volatility,
        "security_definer": f.security_definer,
        "trigger_function": f.result.as_deref() == Some("trigger"),
        "body": body,
        "privileges": grants(&f.privileges),
    });
    Ok(EndpointSpec {
        extensions: Default::default(),
        servers: Vec::new(),
        aliases: Vec::new(),
        deprecated: false,
        description: None,
        destructive: !read_only,
        idempotent: f.volatility == "i",
        input_schema: None,
        meta: Some(Box::new(facts)),
        method: method.into(),
        name: id.clone().into(),
        open_world: false,
        operation_id: None,
        output_schema: None,
        parameters: Vec::new(),
        path: id.clone().into(),
        path_template: id.into(),
        read_only,
        request_body: None,
        responses: Default::default(),
        security: Vec::new(),
        title: None,
    })
}

fn column_type(c: &Column) -> Value {
    let name = c.domain_base.as_deref().unwrap_or(&c.type_name);
    type_schema(name, c.enum_values.as_deref())
}

/// The JSON Schema of a `format_type` text; `enum_values` are the labels of an enum type.
pub fn type_schema(type_name: &str, enum_values: Option<&[String]>) -> Value {
    if let Some(element) = type_name.strip_suffix("[]") {
        return json!({"type": "array", "items": type_schema(element, enum_values)});
    }
    if let Some(labels) = enum_values {
        return json!({"type": "string", "enum": labels});
    }
    let (base, modifier) = match type_name.split_once('(') {
        Some((b, rest)) => (b.trim(), rest.split(')').next()),
        None => (type_name, None),
    };
    let length = modifier.and_then(|m| m.trim().parse::<u64>().ok());
    let int = |min: &str, max: &str| -> Value {
        let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
        json!({"type": "integer", "minimum": parse(min), "maximum": parse(max)})
    };
    match base {
        "smallint" => int("-32768", "32767"),
        "integer" => int("-2147483648", "2147483647"),
        "bigint" => int("-9223372036854775808", "9223372036854775807"),
        "real" | "double precision" | "numeric" => json!({"type": "number"}),
        "boolean" => json!({"type": "boolean"}),
        "text" | "name" | "citext" | "character varying" | "character" | "bpchar" => match length {
            Some(n) => json!({"type": "string", "maxLength": n}),
            None => json!({"type": "string"}),
        },
        "bytea" => json!({"type": "string", "format": "binary"}),
        "uuid" => json!({"type": "string", "format": "uuid"}),
        "date" => json!({"type": "string", "format": "date"}),
        b if b.starts_with("timestamp") => json!({"type": "string", "format": "date-time"}),
        b if b.starts_with("time") => json!({"type": "string", "format": "time"}),
        "interval" => json!({"type": "string", "format": "duration"}),
        // json, jsonb and every type not modelled: any value (the declared type decides).
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_to_json_schema() {
        assert_eq!(
            type_schema("character varying(20)", None),
            json!({"type": "string", "maxLength": 20})
        );
        assert_eq!(type_schema("integer", None)["maximum"], json!(2147483647));
        assert_eq!(
            type_schema("text[]", None),
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(
            type_schema("timestamp with time zone", None)["format"],
            "date-time"
        );
        assert_eq!(
            type_schema("numeric(10,2)", None),
            json!({"type": "number"})
        );
        let labels = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            type_schema("mood", Some(&labels)),
            json!({"type": "string", "enum": ["a", "b"]})
        );
        assert_eq!(type_schema("jsonb", None), json!({}));
    }
}
