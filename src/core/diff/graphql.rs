//! GraphQL rules (normalize/graphql): directive definitions (`ToolSpec::directives`), root
//! operation type names (`ToolSpec::roots`), and the schema keywords the normalizer writes for
//! applied directives, `@oneOf` and `@specifiedBy` (judged from the schema walker).

use super::emit::Emitter;
use super::rule::{Rule, Side};
use super::schema::{Direction, SchemaDiffer};
use super::shared::DOCUMENTATION_CHANGED;
use crate::core::change_kind::ChangeKind;
use crate::core::model::{Severity::*, ToolSpec};
use crate::core::normalize::graphql::{
    DIRECTIVES_KEYWORD, ONE_OF_KEYWORD, SCALAR_DIRECTIVES_KEYWORD, SPECIFIED_BY_KEYWORD,
    TYPE_POINTER, VALUE_DIRECTIVES_KEYWORD,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

pub static DIRECTIVE_ADDED: Rule = Rule::new(
    "directive-added",
    Compatible,
    Side::Contract,
    "A directive definition was added (GraphQL `directive @name`).",
);

pub static DIRECTIVE_APPLIED_CHANGED: Rule = Rule::new(
    "directive-applied-changed",
    Breaking,
    Side::Schema,
    "A directive applied to a type, field, argument, enum value or input field changed (federation `@key`, `@external`, `@tag` included); not modelled, so not assumed safe.",
)
.keywords(&[
    DIRECTIVES_KEYWORD,
    VALUE_DIRECTIVES_KEYWORD,
    SCALAR_DIRECTIVES_KEYWORD,
]);

pub static DIRECTIVE_ARGUMENT_ADDED_OPTIONAL: Rule = Rule::new(
    "directive-argument-added-optional",
    Compatible,
    Side::Contract,
    "A directive gained an optional argument.",
);

pub static DIRECTIVE_ARGUMENT_CHANGED: Rule = Rule::new(
    "directive-argument-changed",
    Breaking,
    Side::Contract,
    "A directive argument was made required, changed its type or its default; documents that use the directive may fail.",
);

pub static DIRECTIVE_ARGUMENT_RELAXED: Rule = Rule::new(
    "directive-argument-relaxed",
    Compatible,
    Side::Contract,
    "A required directive argument became optional (`String!` → `String`); every use stays valid.",
);

pub static DIRECTIVE_ARGUMENT_REMOVED: Rule = Rule::new(
    "directive-argument-removed",
    Breaking,
    Side::Contract,
    "A directive argument was removed, or a required one added; documents that use the directive fail validation.",
);

pub static DIRECTIVE_LOCATION_ADDED: Rule = Rule::new(
    "directive-location-added",
    Compatible,
    Side::Contract,
    "A directive may be used in more places (a location added), or became `repeatable`.",
);

pub static DIRECTIVE_LOCATION_REMOVED: Rule = Rule::new(
    "directive-location-removed",
    Breaking,
    Side::Contract,
    "A directive may no longer be used where it could (a location removed, or `repeatable` dropped).",
);

pub static DIRECTIVE_REMOVED: Rule = Rule::new(
    "directive-removed",
    Breaking,
    Side::Contract,
    "A directive definition was removed; documents that use it fail validation.",
);

pub static INPUT_ONE_OF_ADDED: Rule = Rule::new(
    "input-one-of-added",
    Breaking,
    Side::Request,
    "An input object became `@oneOf`: callers must now set exactly one field.",
)
.keywords(&[ONE_OF_KEYWORD]);

pub static INPUT_ONE_OF_REMOVED: Rule = Rule::new(
    "input-one-of-removed",
    Compatible,
    Side::Request,
    "An input object is no longer `@oneOf`: any combination of its fields is accepted.",
)
.keywords(&[ONE_OF_KEYWORD]);

pub static INPUT_NAMED_TYPE_CHANGED: Rule = Rule::new(
    "input-named-type-changed",
    Breaking,
    Side::Request,
    "An argument or input field names another type (`Int` → `Float`, `ID!` → `String!`, input `A` → `B`): GraphQL types variables nominally, so an operation passing the value through a variable of the old type no longer validates, even where the new type holds every old value. Only wrapper changes (nullability, lists) are judged by direction.",
);

pub static ROOT_TYPE_RENAMED: Rule = Rule::new(
    "root-type-renamed",
    Breaking,
    Side::Contract,
    "A root operation type was renamed (`schema { query: RootQuery }`); `__typename` and fragments `on Query` see it.",
);

pub static SCALAR_SPECIFIED_BY_CHANGED: Rule = Rule::new(
    "scalar-specified-by-changed",
    Breaking,
    Side::Schema,
    "A custom scalar's `@specifiedBy` URL changed: its values follow another specification.",
)
.keywords(&[SPECIFIED_BY_KEYWORD]);

/// Directive definitions, one by one.
pub(super) fn compare_directives(old: &ToolSpec, new: &ToolSpec, out: &mut Emitter) {
    if old.directives == new.directives {
        return;
    }
    let names: BTreeSet<&String> = old.directives.keys().chain(new.directives.keys()).collect();
    for name in names {
        let at = format!("directives.{name}");
        match (old.directives.get(name), new.directives.get(name)) {
            (Some(_), None) => out.emit(
                &DIRECTIVE_REMOVED,
                &at,
                ChangeKind::DirectiveRemoved,
                Some(json!(name)),
                None,
                format!("Directive @{name} was removed."),
            ),
            (None, Some(_)) => out.emit(
                &DIRECTIVE_ADDED,
                &at,
                ChangeKind::DirectiveAdded,
                None,
                Some(json!(name)),
                format!("Directive @{name} was added."),
            ),
            (Some(o), Some(n)) if o != n => compare_directive(name, &at, o, n, out),
            _ => {}
        }
    }
}

fn compare_directive(name: &str, at: &str, o: &Value, n: &Value, out: &mut Emitter) {
    let strings = |v: &Value| -> BTreeSet<String> {
        v.get("locations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    let (ol, nl) = (strings(o), strings(n));
    for gone in ol.difference(&nl) {
        out.emit(
            &DIRECTIVE_LOCATION_REMOVED,
            &format!("{at}.locations"),
            ChangeKind::DirectiveLocationRemoved,
            Some(json!(gone)),
            None,
            format!("Directive @{name} may no longer be used on {gone}."),
        );
    }
    for added in nl.difference(&ol) {
        out.emit(
            &DIRECTIVE_LOCATION_ADDED,
            &format!("{at}.locations"),
            ChangeKind::DirectiveLocationAdded,
            None,
            Some(json!(added)),
            format!("Directive @{name} may now be used on {added}."),
        );
    }
    let repeatable = |v: &Value| v.get("repeatable") == Some(&Value::Bool(true));
    if repeatable(o) != repeatable(n) {
        let rule = if repeatable(n) {
            &DIRECTIVE_LOCATION_ADDED
        } else {
            &DIRECTIVE_LOCATION_REMOVED
        };
        out.emit(
            rule,
            &format!("{at}.repeatable"),
            ChangeKind::DirectiveRepeatableChanged,
            Some(json!(repeatable(o))),
            Some(json!(repeatable(n))),
            format!(
                "Directive @{name} is {} repeatable.",
                if repeatable(n) { "now" } else { "no longer" }
            ),
        );
    }
    if o.get("description") != n.get("description") {
        out.emit(
            &DOCUMENTATION_CHANGED,
            &format!("{at}.description"),
            ChangeKind::DocumentationChanged,
            o.get("description").cloned(),
            n.get("description").cloned(),
            format!("The description of directive @{name} changed."),
        );
    }
    let args = |v: &Value| -> Map<String, Value> {
        v.get("arguments")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (oa, na) = (args(o), args(n));
    let required = |a: &Value| {
        a.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with('!'))
            && a.get("default").is_none()
    };
    let names: BTreeSet<&String> = oa.keys().chain(na.keys()).collect();
    for arg in names {
        let a_at = format!("{at}.arguments.{arg}");
        match (oa.get(arg), na.get(arg)) {
            (Some(_), None) => out.emit(
                &DIRECTIVE_ARGUMENT_REMOVED,
                &a_at,
                ChangeKind::DirectiveArgumentRemoved,
                Some(json!(arg)),
                None,
                format!("Argument {arg} of directive @{name} was removed."),
            ),
            (None, Some(a)) => {
                let rule = if required(a) {
                    &DIRECTIVE_ARGUMENT_REMOVED
                } else {
                    &DIRECTIVE_ARGUMENT_ADDED_OPTIONAL
                };
                out.emit(
                    rule,
                    &a_at,
                    ChangeKind::DirectiveArgumentAdded,
                    None,
                    Some(a.clone()),
                    format!(
                        "Directive @{name} gained {} argument {arg}.",
                        if required(a) {
                            "a required"
                        } else {
                            "an optional"
                        }
                    ),
                );
            }
            (Some(oa), Some(na)) if oa != na => {
                let contract = |a: &Value| (a.get("type").cloned(), a.get("default").cloned());
                let type_of = |a: &Value| a.get("type").and_then(Value::as_str).map(String::from);
                let relaxed = oa.get("default") == na.get("default")
                    && type_of(oa)
                        .zip(type_of(na))
                        .is_some_and(|(o, n)| o == format!("{n}!"));
                if relaxed {
                    out.emit(
                        &DIRECTIVE_ARGUMENT_RELAXED,
                        &a_at,
                        ChangeKind::DirectiveArgumentRelaxed,
                        Some(oa.clone()),
                        Some(na.clone()),
                        format!("Argument {arg} of directive @{name} is no longer required."),
                    );
                } else if contract(oa) != contract(na) {
                    out.emit(
                        &DIRECTIVE_ARGUMENT_CHANGED,
                        &a_at,
                        ChangeKind::DirectiveArgumentChanged,
                        Some(oa.clone()),
                        Some(na.clone()),
                        format!("Argument {arg} of directive @{name} changed."),
                    );
                } else {
                    // Only its description or deprecation.
                    out.emit(
                        &DOCUMENTATION_CHANGED,
                        &a_at,
                        ChangeKind::DocumentationChanged,
                        Some(oa.clone()),
                        Some(na.clone()),
                        format!(
                            "The documentation of argument {arg} of directive @{name} changed."
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Root operation type names (only the ones that differ from the default are kept).
pub(super) fn compare_roots(old: &ToolSpec, new: &ToolSpec, out: &mut Emitter) {
    for operation in ["query", "mutation", "subscription"] {
        let default = match operation {
            "query" => "Query",
            "mutation" => "Mutation",
            _ => "Subscription",
        };
        let name = |s: &ToolSpec| {
            s.roots
                .get(operation)
                .cloned()
                .unwrap_or_else(|| default.to_string())
        };
        let (o, n) = (name(old), name(new));
        if o != n {
            out.emit(
                &ROOT_TYPE_RENAMED,
                &format!("roots.{operation}"),
                ChangeKind::RootTypeRenamed,
                Some(json!(o)),
                Some(json!(n)),
                format!("The {operation} root type was renamed from {o} to {n}."),
            );
        }
    }
}

/// The GraphQL keywords of one schema pair (called by the schema walker).
pub(super) fn compare_schema_keywords(
    differ: &mut SchemaDiffer,
    o: &Map<String, Value>,
    n: &Map<String, Value>,
    dir: Direction,
    path: &str,
    out: &mut Emitter,
) {
    for keyword in [
        DIRECTIVES_KEYWORD,
        VALUE_DIRECTIVES_KEYWORD,
        SCALAR_DIRECTIVES_KEYWORD,
    ] {
        if o.get(keyword) != n.get(keyword) {
            differ.emit(
                out,
                &DIRECTIVE_APPLIED_CHANGED,
                &format!("{path}.{keyword}"),
                ChangeKind::DirectiveAppliedChanged,
                o.get(keyword).cloned(),
                n.get(keyword).cloned(),
                format!("The directives applied at {path} changed."),
            );
        }
    }
    let one_of = |m: &Map<String, Value>| m.get(ONE_OF_KEYWORD) == Some(&Value::Bool(true));
    if one_of(o) != one_of(n) {
        // An input is only ever sent; in a response position it constrains nothing.
        let (rule, word) = if one_of(n) {
            (&INPUT_ONE_OF_ADDED, "now")
        } else {
            (&INPUT_ONE_OF_REMOVED, "no longer")
        };
        if dir == Direction::Request || !one_of(n) {
            differ.emit(
                out,
                rule,
                &format!("{path}.{ONE_OF_KEYWORD}"),
                ChangeKind::OneOfChanged,
                Some(json!(one_of(o))),
                Some(json!(one_of(n))),
                format!("The input at {path} is {word} @oneOf (exactly one field set)."),
            );
        }
    }
    if o.get(SPECIFIED_BY_KEYWORD) != n.get(SPECIFIED_BY_KEYWORD) {
        differ.emit(
            out,
            &SCALAR_SPECIFIED_BY_CHANGED,
            &format!("{path}.{SPECIFIED_BY_KEYWORD}"),
            ChangeKind::SpecifiedByChanged,
            o.get(SPECIFIED_BY_KEYWORD).cloned(),
            n.get(SPECIFIED_BY_KEYWORD).cloned(),
            format!("The @specifiedBy URL of the scalar at {path} changed."),
        );
    }
}

/// The named type a GraphQL schema node stands for (normalize/graphql's projection), its
/// wrappers aside: `Int`, `Float`, `String`, `Boolean`, `ID`, a custom scalar (`format`), or a
/// definition (`$ref`, `allOf: [$ref]`); a nullable list item (`type: [T, "null"]`,
/// `anyOf: [T, {"type": "null"}]`) is its item's type. `None` for a list or anything else.
fn named_type(schema: &Value) -> Option<String> {
    let map = schema.as_object()?;
    if let Some(r) = map.get("$ref").and_then(Value::as_str) {
        return Some(r.strip_prefix(TYPE_POINTER).unwrap_or(r).to_string());
    }
    for keyword in ["allOf", "anyOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            let kept: Vec<&Value> = branches
                .iter()
                .filter(|b| **b != json!({"type": "null"}))
                .collect();
            return match kept.as_slice() {
                [only] if keyword == "allOf" || kept.len() < branches.len() => named_type(only),
                _ => None,
            };
        }
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        None => Vec::new(),
        Some(_) => return None,
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    let format = map.get("format").and_then(Value::as_str);
    let name = match (types.as_slice(), format) {
        ([], Some(custom)) => custom,
        (["integer"], None) => "Int",
        (["number"], None) => "Float",
        (["boolean"], None) => "Boolean",
        (["string"], Some("ID")) => "ID",
        (["string"], None) => "String",
        _ => return None,
    };
    Some(name.to_string())
}

/// GraphQL's nominal check of what a caller sends (the walker's named-type hook): an
/// argument or input field whose named type changed is `input-named-type-changed`, whatever
/// the values of the two types; wrappers (nullability, lists) are left to the walk.
pub(super) fn compare_named_types(
    differ: &mut SchemaDiffer,
    o: &Value,
    n: &Value,
    path: &str,
    out: &mut Emitter,
) -> bool {
    let (Some(before), Some(after)) = (named_type(o), named_type(n)) else {
        return false;
    };
    if before == after {
        return false;
    }
    differ.emit(
        out,
        &INPUT_NAMED_TYPE_CHANGED,
        path,
        ChangeKind::TypeChanged,
        Some(json!(before)),
        Some(json!(after)),
        format!("The input at {path} changed its type from {before} to {after}; variables of the old type no longer validate."),
    );
    true
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &DIRECTIVE_ADDED,
    &DIRECTIVE_APPLIED_CHANGED,
    &DIRECTIVE_ARGUMENT_ADDED_OPTIONAL,
    &DIRECTIVE_ARGUMENT_CHANGED,
    &DIRECTIVE_ARGUMENT_RELAXED,
    &DIRECTIVE_ARGUMENT_REMOVED,
    &DIRECTIVE_LOCATION_ADDED,
    &DIRECTIVE_LOCATION_REMOVED,
    &DIRECTIVE_REMOVED,
    &INPUT_NAMED_TYPE_CHANGED,
    &INPUT_ONE_OF_ADDED,
    &INPUT_ONE_OF_REMOVED,
    &ROOT_TYPE_RENAMED,
    &SCALAR_SPECIFIED_BY_CHANGED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{check_case, graphql, Case};

    /// One case per rule of this family: (old SDL, new SDL).
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        const BASE: &str = "directive @auth(role: String) on FIELD_DEFINITION\n\
             type Query { me(filter: Filter): User }\n\
             input Filter { id: ID, name: String }\n\
             scalar Url @specifiedBy(url: \"https://example.com/url\")\n\
             type User @key(fields: \"id\") { id: ID!, home: Url }";
        vec![
            Case::new(
                &DIRECTIVE_ADDED,
                graphql(
                    BASE,
                    &format!("{BASE}\ndirective @cost(weight: Int) on FIELD_DEFINITION"),
                ),
            ),
            Case::new(
                &DIRECTIVE_REMOVED,
                graphql(
                    BASE,
                    &BASE.replace("directive @auth(role: String) on FIELD_DEFINITION", ""),
                ),
            ),
            Case::new(
                &DIRECTIVE_LOCATION_REMOVED,
                graphql(
                    &BASE.replace("on FIELD_DEFINITION", "on FIELD_DEFINITION | OBJECT"),
                    BASE,
                ),
            ),
            Case::new(
                &DIRECTIVE_LOCATION_REMOVED,
                graphql(&BASE.replace("String) on", "String) repeatable on"), BASE),
            ),
            Case::new(
                &DIRECTIVE_LOCATION_ADDED,
                graphql(
                    BASE,
                    &BASE.replace("on FIELD_DEFINITION", "on FIELD_DEFINITION | OBJECT"),
                ),
            ),
            Case::new(
                &DIRECTIVE_ARGUMENT_REMOVED,
                graphql(BASE, &BASE.replace("@auth(role: String)", "@auth")),
            ),
            Case::new(
                &INPUT_NAMED_TYPE_CHANGED,
                graphql(BASE, &BASE.replace("{ id: ID, name", "{ id: String, name")),
            ),
            Case::new(
                &DIRECTIVE_ARGUMENT_REMOVED,
                graphql(
                    BASE,
                    &BASE.replace("(role: String)", "(role: String, scope: String!)"),
                ),
            ),
            Case::new(
                &DIRECTIVE_ARGUMENT_ADDED_OPTIONAL,
                graphql(
                    BASE,
                    &BASE.replace("(role: String)", "(role: String, scope: String)"),
                ),
            ),
            Case::new(
                &DIRECTIVE_ARGUMENT_CHANGED,
                graphql(BASE, &BASE.replace("(role: String)", "(role: String!)")),
            ),
            Case::new(
                &DIRECTIVE_ARGUMENT_RELAXED,
                graphql(&BASE.replace("(role: String)", "(role: String!)"), BASE),
            ),
            Case::new(
                &DIRECTIVE_APPLIED_CHANGED,
                graphql(
                    BASE,
                    &BASE.replace("@key(fields: \"id\")", "@key(fields: \"id home\")"),
                ),
            ),
            Case::new(
                &DIRECTIVE_APPLIED_CHANGED,
                graphql(
                    BASE,
                    &BASE.replace("id: ID!, home", "id: ID! @external, home"),
                ),
            ),
            Case::new(
                &INPUT_ONE_OF_ADDED,
                graphql(BASE, &BASE.replace("input Filter", "input Filter @oneOf")),
            ),
            Case::new(
                &INPUT_ONE_OF_REMOVED,
                graphql(&BASE.replace("input Filter", "input Filter @oneOf"), BASE),
            ),
            Case::new(
                &SCALAR_SPECIFIED_BY_CHANGED,
                graphql(BASE, &BASE.replace("example.com/url", "example.com/uri")),
            ),
            Case::new(
                &ROOT_TYPE_RENAMED,
                graphql(
                    BASE,
                    &format!(
                        "schema {{ query: RootQuery }}\n{}",
                        BASE.replace("type Query", "type RootQuery")
                    ),
                ),
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
