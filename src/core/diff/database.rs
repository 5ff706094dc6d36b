//! Database rules (kinds `sqlite` and `postgres`): a new table or view, and the table facts the normalizer
//! keeps in an endpoint's `meta` (column order, primary key, unique, foreign keys, checks,
//! options, indexes, declared types, view definitions, triggers). Columns themselves are an
//! object schema on both sides and are judged by the schema rules: a dropped column is
//! `response-property-removed` (breaking), a nullable column or a `NOT NULL` one with a default
//! is `request-property-added-optional` (compatible), `NOT NULL` without a default is
//! `request-property-added-required` (breaking), a type change is judged by side.

use super::emit::Emitter;
use super::rule::{Rule, Side};
use super::shared::{endpoint_path, META_CHANGED};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{EndpointSpec, EndpointSubKind, Kind, Severity::*};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub static DATABASE_CHECK_CHANGED: Rule = Rule::new(
    "database-check-changed",
    Breaking,
    Side::Table,
    "A table's CHECK constraints changed: writes may now fail, or readers receive values the old check excluded.",
);

pub static DATABASE_COLUMN_REORDERED: Rule = Rule::new(
    "database-column-reordered",
    Breaking,
    Side::Table,
    "Columns kept in both versions changed order; positional INSERT … VALUES and SELECT * depend on it.",
);

pub static DATABASE_DECLARED_TYPE_CHANGED: Rule = Rule::new(
    "database-declared-type-changed",
    Info,
    Side::Table,
    "A column's declared type text changed without changing its type (a SQLite length such as VARCHAR(20) is not enforced).",
);

pub static DATABASE_FOREIGN_KEY_CHANGED: Rule = Rule::new(
    "database-foreign-key-changed",
    Breaking,
    Side::Table,
    "A foreign key was added, removed or changed (columns, target table or columns, actions).",
);

pub static DATABASE_INDEX_CHANGED: Rule = Rule::new(
    "database-index-changed",
    Info,
    Side::Table,
    "An index was added, removed or changed (a unique index is also a unique constraint).",
);

pub static DATABASE_OBJECT_ADDED: Rule = Rule::new(
    "database-object-added",
    Compatible,
    Side::Endpoint,
    "A new table or view appeared; a table is data, not an operation (docs/design.md).",
);

pub static DATABASE_PRIMARY_KEY_CHANGED: Rule = Rule::new(
    "database-primary-key-changed",
    Breaking,
    Side::Table,
    "A table's primary key changed.",
);

pub static DATABASE_TABLE_OPTIONS_CHANGED: Rule = Rule::new(
    "database-table-options-changed",
    Breaking,
    Side::Table,
    "A table became or stopped being STRICT or WITHOUT ROWID.",
);

pub static DATABASE_TRIGGER_ADDED: Rule = Rule::new(
    "database-trigger-added",
    Security,
    Side::Table,
    "A trigger appeared: code that now runs on every matching write.",
);

pub static DATABASE_TRIGGER_CHANGED: Rule = Rule::new(
    "database-trigger-changed",
    Security,
    Side::Table,
    "A trigger's timing, event or body changed.",
);

pub static DATABASE_TRIGGER_REMOVED: Rule = Rule::new(
    "database-trigger-removed",
    Security,
    Side::Table,
    "A trigger disappeared (it may have enforced an audit trail or an invariant).",
);

pub static DATABASE_UNIQUE_CHANGED: Rule = Rule::new(
    "database-unique-changed",
    Breaking,
    Side::Table,
    "A unique constraint (or unique index) was added or removed.",
);

pub static DATABASE_VIEW_DEFINITION_CHANGED: Rule = Rule::new(
    "database-view-definition-changed",
    Info,
    Side::Table,
    "A view's query changed; its columns are judged by the schema rules.",
);

pub static DATABASE_COLUMN_TYPE_CHANGED: Rule = Rule::new(
    "database-column-type-changed",
    Breaking,
    Side::Table,
    "An enforced column type (PostgreSQL) changed in a way its JSON Schema does not show (numeric precision, timestamp zone, an unmodelled type).",
);

pub static DATABASE_FUNCTION_ADDED_READ_ONLY: Rule = Rule::new(
    "database-function-added-read-only",
    Compatible,
    Side::Endpoint,
    "A new STABLE or IMMUTABLE function appeared (read-only).",
);

pub static DATABASE_FUNCTION_ADDED_WRITE: Rule = Rule::new(
    "database-function-added-write",
    Security,
    Side::Endpoint,
    "A new VOLATILE function or a procedure appeared: it can write.",
);

pub static DATABASE_FUNCTION_BODY_CHANGED: Rule = Rule::new(
    "database-function-body-changed",
    Info,
    Side::Table,
    "The body of a read-only function changed (an implementation change: pins see implementation_changed).",
);

pub static DATABASE_FUNCTION_BODY_CHANGED_SENSITIVE: Rule = Rule::new(
    "database-function-body-changed-sensitive",
    Security,
    Side::Table,
    "The body of a SECURITY DEFINER, VOLATILE or trigger function, or of a procedure, changed.",
);

pub static DATABASE_FUNCTION_RESULT_CHANGED: Rule = Rule::new(
    "database-function-result-changed",
    Breaking,
    Side::Table,
    "A function's result type changed.",
);

pub static DATABASE_FUNCTION_VOLATILITY_CHANGED: Rule = Rule::new(
    "database-function-volatility-changed",
    Info,
    Side::Table,
    "A function's volatility changed (a change to or from VOLATILE is also a side-effects change).",
);

pub static DATABASE_OBJECT_ADDED_WITH_GRANTS: Rule = Rule::new(
    "database-object-added-with-grants",
    Security,
    Side::Endpoint,
    "A new table or view appeared with privileges granted to a role other than its owner.",
);

pub static DATABASE_POLICY_CHANGED: Rule = Rule::new(
    "database-policy-changed",
    Security,
    Side::Table,
    "A row-level security policy was added, removed or changed (command, roles, USING, WITH CHECK).",
);

pub static DATABASE_PRIVILEGE_GRANTED: Rule = Rule::new(
    "database-privilege-granted",
    Security,
    Side::Table,
    "A privilege on a table, view or function was granted (to PUBLIC or any role).",
);

pub static DATABASE_PRIVILEGE_REVOKED: Rule = Rule::new(
    "database-privilege-revoked",
    Breaking,
    Side::Table,
    "A privilege on a table, view or function was revoked; its holders' calls fail.",
);

pub static DATABASE_ROW_SECURITY_CHANGED: Rule = Rule::new(
    "database-row-security-changed",
    Security,
    Side::Table,
    "Row-level security was enabled, disabled, forced or unforced on a table.",
);

pub static DATABASE_SECURITY_DEFINER_CHANGED: Rule = Rule::new(
    "database-security-definer-changed",
    Security,
    Side::Table,
    "A function became or stopped being SECURITY DEFINER (it runs with its owner's rights).",
);

fn has_grants(e: &EndpointSpec) -> bool {
    e.meta
        .as_ref()
        .and_then(|m| m.get("privileges"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// A table, view, function or procedure of the new contract that the old one lacks.
pub(crate) fn added(n: &EndpointSpec, out: &mut Emitter) {
    if matches!(
        n.sub_kind(),
        EndpointSubKind::Function | EndpointSubKind::Procedure
    ) {
        let (rule, why) = if n.read_only {
            (
                &DATABASE_FUNCTION_ADDED_READ_ONLY,
                "it is STABLE or IMMUTABLE",
            )
        } else {
            (
                &DATABASE_FUNCTION_ADDED_WRITE,
                "it is VOLATILE or a procedure, so it can write and needs review",
            )
        };
        out.emit(
            rule,
            &endpoint_path(n),
            ChangeKind::EndpointAdded,
            None,
            Some(json!(n.identity())),
            format!("{} {} was added; {why}.", n.method.to_lowercase(), n.name),
        );
        return;
    }
    if has_grants(n) {
        out.emit(
            &DATABASE_OBJECT_ADDED_WITH_GRANTS,
            &endpoint_path(n),
            ChangeKind::EndpointAdded,
            None,
            n.meta.as_ref().and_then(|m| m.get("privileges")).cloned(),
            format!(
                "{} {} was added with privileges granted to roles other than its owner.",
                n.method.to_lowercase(),
                n.name
            ),
        );
        return;
    }
    out.emit(
        &DATABASE_OBJECT_ADDED,
        &endpoint_path(n),
        ChangeKind::EndpointAdded,
        None,
        Some(json!(n.identity())),
        format!(
            "{} {} was added; a new {} changes no existing reader or writer.",
            n.method.to_lowercase(),
            n.name,
            n.method.to_lowercase()
        ),
    );
}

/// Compares the table facts of a matched pair (both `meta`).
pub(crate) fn compare_facts(o: &EndpointSpec, n: &EndpointSpec, at: &str, out: &mut Emitter) {
    let empty = Map::new();
    let old = o
        .meta
        .as_deref()
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let new = n
        .meta
        .as_deref()
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let name = &n.name;
    for key in keys {
        let (before, after) = (old.get(key.as_str()), new.get(key.as_str()));
        if before == after {
            continue;
        }
        let path = format!("{at}.meta.{key}");
        let simple = |rule: &'static Rule, what: &str, kind: ChangeKind, out: &mut Emitter| {
            out.emit(
                rule,
                &path,
                kind,
                before.cloned(),
                after.cloned(),
                format!("The {what} of {name} changed."),
            );
        };
        match key.as_str() {
            "columns" => column_order(before, after, &path, name, out),
            "declared_types" => {
                // Only columns kept in both: an added or dropped column is a schema change.
                let kept_changed = match (
                    before.and_then(Value::as_object),
                    after.and_then(Value::as_object),
                ) {
                    (Some(b), Some(a)) => b.iter().any(|(c, t)| a.get(c).is_some_and(|u| u != t)),
                    _ => false,
                };
                if kept_changed {
                    if out.kind() == Some(Kind::Postgres)
                        && enforced_type_hidden(o, n, before, after)
                    {
                        simple(
                            &DATABASE_COLUMN_TYPE_CHANGED,
                            "column types",
                            ChangeKind::DeclaredTypesChanged,
                            out,
                        )
                    } else {
                        simple(
                            &DATABASE_DECLARED_TYPE_CHANGED,
                            "declared column types",
                            ChangeKind::DeclaredTypesChanged,
                            out,
                        )
                    }
                }
            }
            "primary_key" => simple(
                &DATABASE_PRIMARY_KEY_CHANGED,
                "primary key",
                ChangeKind::PrimaryKeyChanged,
                out,
            ),
            "unique" => simple(
                &DATABASE_UNIQUE_CHANGED,
                "unique constraints",
                ChangeKind::UniqueChanged,
                out,
            ),
            "foreign_keys" => simple(
                &DATABASE_FOREIGN_KEY_CHANGED,
                "foreign keys",
                ChangeKind::ForeignKeysChanged,
                out,
            ),
            "checks" => simple(
                &DATABASE_CHECK_CHANGED,
                "CHECK constraints",
                ChangeKind::ChecksChanged,
                out,
            ),
            "options" => simple(
                &DATABASE_TABLE_OPTIONS_CHANGED,
                "table options",
                ChangeKind::OptionsChanged,
                out,
            ),
            "indexes" => simple(
                &DATABASE_INDEX_CHANGED,
                "indexes",
                ChangeKind::IndexesChanged,
                out,
            ),
            "definition" => simple(
                &DATABASE_VIEW_DEFINITION_CHANGED,
                "view definition",
                ChangeKind::DefinitionChanged,
                out,
            ),
            "triggers" => triggers(before, after, &path, name, out),
            "row_security" => simple(
                &DATABASE_ROW_SECURITY_CHANGED,
                "row-level security",
                ChangeKind::RowSecurityChanged,
                out,
            ),
            "policies" => simple(
                &DATABASE_POLICY_CHANGED,
                "row-level security policies",
                ChangeKind::PoliciesChanged,
                out,
            ),
            "privileges" => privileges(before, after, &path, name, out),
            "result" => simple(
                &DATABASE_FUNCTION_RESULT_CHANGED,
                "result type",
                ChangeKind::ResultChanged,
                out,
            ),
            "volatility" => simple(
                &DATABASE_FUNCTION_VOLATILITY_CHANGED,
                "volatility",
                ChangeKind::VolatilityChanged,
                out,
            ),
            "security_definer" => simple(
                &DATABASE_SECURITY_DEFINER_CHANGED,
                "SECURITY DEFINER flag",
                ChangeKind::SecurityDefinerChanged,
                out,
            ),
            "trigger_function" => {}
            "body" => {
                let fact =
                    |e: &EndpointSpec, key: &str| e.meta.as_ref().and_then(|m| m.get(key)).cloned();
                let sensitive = [o, n].iter().any(|e| {
                    e.sub_kind() == EndpointSubKind::Procedure
                        || fact(e, "security_definer") == Some(json!(true))
                        || fact(e, "volatility") == Some(json!("v"))
                        || fact(e, "trigger_function") == Some(json!(true))
                });
                if sensitive {
                    simple(
                        &DATABASE_FUNCTION_BODY_CHANGED_SENSITIVE,
                        "body (it can write or runs with other rights)",
                        ChangeKind::BodyChanged,
                        out,
                    )
                } else {
                    simple(
                        &DATABASE_FUNCTION_BODY_CHANGED,
                        "body",
                        ChangeKind::BodyChanged,
                        out,
                    )
                }
            }
            _ => out.emit(
                &META_CHANGED,
                &path,
                ChangeKind::MetaChanged,
                before.cloned(),
                after.cloned(),
                format!("The catalog fact {key} of {name} changed."),
            ),
        }
    }
}

/// A kept column whose declared type changed while its output schema did not: the schema
/// rules see nothing, so the (enforced) type change is judged here.
fn enforced_type_hidden(
    o: &EndpointSpec,
    n: &EndpointSpec,
    before: Option<&Value>,
    after: Option<&Value>,
) -> bool {
    let (Some(b), Some(a)) = (
        before.and_then(Value::as_object),
        after.and_then(Value::as_object),
    ) else {
        return false;
    };
    let column = |e: &EndpointSpec, c: &str| {
        e.output_schema
            .as_ref()
            .and_then(|s| {
                s.pointer(&format!(
                    "/properties/{}",
                    c.replace('~', "~0").replace('/', "~1")
                ))
            })
            .cloned()
    };
    b.iter().any(|(c, t)| {
        a.get(c)
            .is_some_and(|u| u != t && column(o, c) == column(n, c))
    })
}

fn privileges(
    before: Option<&Value>,
    after: Option<&Value>,
    path: &str,
    name: &str,
    out: &mut Emitter,
) {
    let (old, new) = (names(before), names(after));
    let granted: Vec<&String> = new.iter().filter(|g| !old.contains(g)).collect();
    let revoked: Vec<&String> = old.iter().filter(|g| !new.contains(g)).collect();
    if !granted.is_empty() {
        out.emit(
            &DATABASE_PRIVILEGE_GRANTED,
            path,
            ChangeKind::PrivilegeGranted,
            before.cloned(),
            Some(json!(granted)),
            format!("Privileges on {name} were granted: {}.", join(&granted)),
        );
    }
    if !revoked.is_empty() {
        out.emit(
            &DATABASE_PRIVILEGE_REVOKED,
            path,
            ChangeKind::PrivilegeRevoked,
            Some(json!(revoked)),
            after.cloned(),
            format!("Privileges on {name} were revoked: {}.", join(&revoked)),
        );
    }
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn names(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Only the relative order of columns present in both versions matters: a dropped column or
/// one appended is judged by the schema rules.
fn column_order(
    before: Option<&Value>,
    after: Option<&Value>,
    path: &str,
    name: &str,
    out: &mut Emitter,
) {
    let (old, new) = (names(before), names(after));
    let kept_old: Vec<&String> = old.iter().filter(|c| new.contains(c)).collect();
    let kept_new: Vec<&String> = new.iter().filter(|c| old.contains(c)).collect();
    if kept_old != kept_new {
        out.emit(
            &DATABASE_COLUMN_REORDERED,
            path,
            ChangeKind::ColumnReordered,
            before.cloned(),
            after.cloned(),
            format!("The columns of {name} changed order; positional inserts and SELECT * see a different row."),
        );
    }
}

fn triggers(
    before: Option<&Value>,
    after: Option<&Value>,
    path: &str,
    name: &str,
    out: &mut Emitter,
) {
    let by_name = |v: Option<&Value>| -> BTreeMap<String, Value> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|t| {
                        (
                            t["name"].as_str().unwrap_or_default().to_string(),
                            t.clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (old, new) = (by_name(before), by_name(after));
    let all: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for trigger in all {
        let (o, n) = (old.get(trigger), new.get(trigger));
        let (rule, what, kind) = match (o, n) {
            (None, Some(_)) => (
                &DATABASE_TRIGGER_ADDED,
                "was added",
                ChangeKind::TriggerAdded,
            ),
            (Some(_), None) => (
                &DATABASE_TRIGGER_REMOVED,
                "was removed",
                ChangeKind::TriggerRemoved,
            ),
            (Some(a), Some(b)) if a != b => (
                &DATABASE_TRIGGER_CHANGED,
                "changed",
                ChangeKind::TriggerChanged,
            ),
            _ => continue,
        };
        out.emit(
            rule,
            &format!("{path}.{trigger}"),
            kind,
            o.cloned(),
            n.cloned(),
            format!(
                "Trigger {trigger} on {name} {what}; it runs code on writes, so it needs review."
            ),
        );
    }
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &DATABASE_CHECK_CHANGED,
    &DATABASE_COLUMN_REORDERED,
    &DATABASE_COLUMN_TYPE_CHANGED,
    &DATABASE_DECLARED_TYPE_CHANGED,
    &DATABASE_FOREIGN_KEY_CHANGED,
    &DATABASE_FUNCTION_ADDED_READ_ONLY,
    &DATABASE_FUNCTION_ADDED_WRITE,
    &DATABASE_FUNCTION_BODY_CHANGED,
    &DATABASE_FUNCTION_BODY_CHANGED_SENSITIVE,
    &DATABASE_FUNCTION_RESULT_CHANGED,
    &DATABASE_FUNCTION_VOLATILITY_CHANGED,
    &DATABASE_INDEX_CHANGED,
    &DATABASE_OBJECT_ADDED,
    &DATABASE_OBJECT_ADDED_WITH_GRANTS,
    &DATABASE_POLICY_CHANGED,
    &DATABASE_PRIMARY_KEY_CHANGED,
    &DATABASE_PRIVILEGE_GRANTED,
    &DATABASE_PRIVILEGE_REVOKED,
    &DATABASE_ROW_SECURITY_CHANGED,
    &DATABASE_SECURITY_DEFINER_CHANGED,
    &DATABASE_TABLE_OPTIONS_CHANGED,
    &DATABASE_TRIGGER_ADDED,
    &DATABASE_TRIGGER_CHANGED,
    &DATABASE_TRIGGER_REMOVED,
    &DATABASE_UNIQUE_CHANGED,
    &DATABASE_VIEW_DEFINITION_CHANGED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{check_case, postgres, sqlite, Case};

    /// One case per rule of this family.
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &DATABASE_CHECK_CHANGED,
                sqlite(|c| {
                    c["relations"][1]["sql"] = json!("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (length(name) <= 20), email TEXT)");
                }),
            ),
            Case::new(
                &DATABASE_COLUMN_REORDERED,
                sqlite(|c| {
                    let cols = c["relations"][1]["columns"].as_array_mut().unwrap();
                    cols.swap(1, 2);
                }),
            ),
            Case::new(
                &DATABASE_DECLARED_TYPE_CHANGED,
                sqlite(|c| {
                    c["relations"][1]["columns"][2]["declared_type"] = json!("VARCHAR(80)");
                }),
            ),
            Case::new(
                &DATABASE_FOREIGN_KEY_CHANGED,
                sqlite(|c| {
                    c["relations"][0]["foreign_keys"][0]["on_delete"] = json!("CASCADE");
                }),
            ),
            Case::new(
                &DATABASE_INDEX_CHANGED,
                sqlite(|c| {
                    c["relations"][0]["indexes"] = json!([]);
                }),
            ),
            Case::new(
                &DATABASE_OBJECT_ADDED,
                sqlite(|c| {
                    let mut t = c["relations"][1].clone();
                    t["name"] = json!("accounts");
                    t["kind"] = json!("view");
                    c["relations"].as_array_mut().unwrap().push(t);
                }),
            ),
            Case::new(
                &DATABASE_PRIMARY_KEY_CHANGED,
                sqlite(|c| {
                    c["relations"][1]["columns"][1]["pk"] = json!(2);
                }),
            ),
            Case::new(
                &DATABASE_TABLE_OPTIONS_CHANGED,
                sqlite(|c| {
                    c["relations"][1]["without_rowid"] = json!(true);
                }),
            ),
            Case::new(
                &DATABASE_TRIGGER_ADDED,
                sqlite(|c| {
                    c["triggers"] = json!([{"name": "audit", "table": "users",
                        "sql": "CREATE TRIGGER audit AFTER INSERT ON users BEGIN SELECT 1; END"}]);
                }),
            ),
            Case::new(
                &DATABASE_TRIGGER_CHANGED,
                sqlite(|c| {
                    c["triggers"][0]["sql"] =
                        json!("CREATE TRIGGER touch AFTER DELETE ON posts BEGIN SELECT 2; END");
                }),
            ),
            Case::new(
                &DATABASE_TRIGGER_REMOVED,
                sqlite(|c| {
                    c["triggers"] = json!([]);
                }),
            ),
            Case::new(
                &DATABASE_UNIQUE_CHANGED,
                sqlite(|c| {
                    c["relations"][1]["indexes"] = json!([]);
                }),
            ),
            Case::new(
                &DATABASE_COLUMN_TYPE_CHANGED,
                postgres(|c| {
                    c["relations"][0]["columns"][1]["type_name"] = json!("numeric(12,2)");
                }),
            ),
            Case::new(
                &DATABASE_FUNCTION_ADDED_READ_ONLY,
                postgres(|c| {
                    let mut f = c["functions"][0].clone();
                    f["name"] = json!("count_orders");
                    c["functions"].as_array_mut().unwrap().push(f);
                }),
            ),
            Case::new(
                &DATABASE_FUNCTION_ADDED_WRITE,
                postgres(|c| {
                    let mut f = c["functions"][0].clone();
                    f["name"] = json!("purge");
                    f["volatility"] = json!("v");
                    c["functions"].as_array_mut().unwrap().push(f);
                }),
            ),
            Case::new(
                &DATABASE_FUNCTION_BODY_CHANGED,
                postgres(|c| {
                    c["functions"][0]["body"] = json!("SELECT 2");
                }),
            ),
            Case::new(
                &DATABASE_FUNCTION_BODY_CHANGED_SENSITIVE,
                postgres(|c| {
                    c["functions"][0]["security_definer"] = json!(true);
                    c["functions"][0]["body"] = json!("SELECT 2");
                }),
            ),
            Case::new(
                &DATABASE_FUNCTION_RESULT_CHANGED,
                postgres(|c| {
                    c["functions"][0]["result"] = json!("numeric");
                }),
            ),
            Case::new(
                &DATABASE_FUNCTION_VOLATILITY_CHANGED,
                postgres(|c| {
                    c["functions"][0]["volatility"] = json!("i");
                }),
            ),
            Case::new(
                &DATABASE_OBJECT_ADDED_WITH_GRANTS,
                postgres(|c| {
                    let mut t = c["relations"][0].clone();
                    t["name"] = json!("refunds");
                    t["privileges"] = json!([{"grantee": "PUBLIC", "privilege": "SELECT"}]);
                    c["relations"].as_array_mut().unwrap().push(t);
                }),
            ),
            Case::new(
                &DATABASE_POLICY_CHANGED,
                postgres(|c| {
                    c["relations"][0]["policies"] = json!([{"name": "own", "command": "r", "permissive": true,
                        "roles": ["PUBLIC"], "using": "(owner = CURRENT_USER)", "with_check": null}]);
                }),
            ),
            Case::new(
                &DATABASE_PRIVILEGE_GRANTED,
                postgres(|c| {
                    c["relations"][0]["privileges"] =
                        json!([{"grantee": "PUBLIC", "privilege": "SELECT"}]);
                }),
            ),
            Case::new(
                &DATABASE_PRIVILEGE_REVOKED,
                postgres(|c| {
                    c["functions"][0]["privileges"] = json!([]);
                }),
            ),
            Case::new(
                &DATABASE_ROW_SECURITY_CHANGED,
                postgres(|c| {
                    c["relations"][0]["row_security"] = json!(true);
                }),
            ),
            Case::new(
                &DATABASE_SECURITY_DEFINER_CHANGED,
                postgres(|c| {
                    c["functions"][0]["security_definer"] = json!(true);
                }),
            ),
            Case::new(
                &DATABASE_VIEW_DEFINITION_CHANGED,
                sqlite(|c| {
                    c["relations"][2]["sql"] =
                        json!("CREATE VIEW names AS SELECT name FROM users WHERE id > 0");
                }),
            ),
        ]
    }

    #[test]
    fn cases_fire_their_rules() {
        for case in cases() {
            check_case(&case);
        }
    }
}
