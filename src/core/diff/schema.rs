//! Recursive, direction-aware JSON Schema comparison.
//!
//! What a caller sends (`Direction::Request`) may only widen; what it receives
//! (`Direction::Response`) may only narrow or gain properties. `$ref`s are resolved against each
//! side's definitions; a change inside a named definition is reported once per direction at the
//! definition's own path (`components.schemas.Pet.properties.name`), and cycles end because each
//! (old ref, new ref, direction) is compared once.

use super::emit::Emitter;
pub use super::rule::Direction;
use super::rule::{Rule, Side};
#[cfg(test)]
use super::shared::DOC_KEYWORDS;
use super::shared::{DEPRECATED_CHANGED, DOCUMENTATION_CHANGED};
use crate::core::change_kind::ChangeKind;
use crate::core::json::to_canonical_string;
use crate::core::model::Severity::*;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// A schema rule's two directions: the rule that judges a change in what a caller sends, and
/// the one for what it receives. The walker picks by the direction it compares in
/// ([`Directed::pick`]); [`DIRECTED`] lists every pair, so the symmetry test sees them all.
#[derive(Debug)]
pub struct Directed {
    pub request: &'static Rule,
    pub response: &'static Rule,
}

impl Directed {
    pub const fn new(request: &'static Rule, response: &'static Rule) -> Directed {
        Directed { request, response }
    }

    /// The rule of direction `dir`.
    pub fn pick(&self, dir: Direction) -> &'static Rule {
        dir.pick(self.request, self.response)
    }
}

pub static DEFAULT_CHANGED: Directed =
    Directed::new(&REQUEST_DEFAULT_CHANGED, &RESPONSE_DEFAULT_CHANGED);
pub static PROPERTY_REMOVED: Directed =
    Directed::new(&REQUEST_PROPERTY_REMOVED, &RESPONSE_PROPERTY_REMOVED);
/// Adding a property is judged by its requiredness only where a caller must send it: a
/// received property is `response-property-added` either way.
pub static PROPERTY_ADDED_REQUIRED: Directed =
    Directed::new(&REQUEST_PROPERTY_ADDED_REQUIRED, &RESPONSE_PROPERTY_ADDED);
pub static PROPERTY_ADDED_OPTIONAL: Directed =
    Directed::new(&REQUEST_PROPERTY_ADDED_OPTIONAL, &RESPONSE_PROPERTY_ADDED);
pub static PROPERTY_BECAME_REQUIRED: Directed = Directed::new(
    &REQUEST_PROPERTY_BECAME_REQUIRED,
    &RESPONSE_PROPERTY_BECAME_REQUIRED,
);
pub static PROPERTY_BECAME_OPTIONAL: Directed = Directed::new(
    &REQUEST_PROPERTY_BECAME_OPTIONAL,
    &RESPONSE_PROPERTY_BECAME_OPTIONAL,
);
pub static ENUM_VALUE_ADDED: Directed =
    Directed::new(&REQUEST_ENUM_VALUE_ADDED, &RESPONSE_ENUM_VALUE_ADDED);
pub static ENUM_VALUE_REMOVED: Directed =
    Directed::new(&REQUEST_ENUM_VALUE_REMOVED, &RESPONSE_ENUM_VALUE_REMOVED);
pub static BRANCH_ADDED: Directed = Directed::new(&REQUEST_BRANCH_ADDED, &RESPONSE_BRANCH_ADDED);
pub static BRANCH_REMOVED: Directed =
    Directed::new(&REQUEST_BRANCH_REMOVED, &RESPONSE_BRANCH_REMOVED);
/// The safe way a type moves differs by direction: a caller may send more (widened), and
/// receive less (narrowed).
pub static TYPE_SAFE_SHIFT: Directed =
    Directed::new(&REQUEST_TYPE_WIDENED, &RESPONSE_TYPE_NARROWED);
pub static TYPE_CHANGED: Directed = Directed::new(&REQUEST_TYPE_CHANGED, &RESPONSE_TYPE_CHANGED);
pub static CONSTRAINT_TIGHTENED: Directed = Directed::new(
    &REQUEST_CONSTRAINT_TIGHTENED,
    &RESPONSE_CONSTRAINT_TIGHTENED,
);
pub static CONSTRAINT_RELAXED: Directed =
    Directed::new(&REQUEST_CONSTRAINT_RELAXED, &RESPONSE_CONSTRAINT_RELAXED);
pub static CONSTRAINT_CHANGED: Directed =
    Directed::new(&REQUEST_CONSTRAINT_CHANGED, &RESPONSE_CONSTRAINT_CHANGED);

/// Every directed pair of schema rules.
pub static DIRECTED: &[&Directed] = &[
    &DEFAULT_CHANGED,
    &PROPERTY_REMOVED,
    &PROPERTY_ADDED_REQUIRED,
    &PROPERTY_ADDED_OPTIONAL,
    &PROPERTY_BECAME_REQUIRED,
    &PROPERTY_BECAME_OPTIONAL,
    &ENUM_VALUE_ADDED,
    &ENUM_VALUE_REMOVED,
    &BRANCH_ADDED,
    &BRANCH_REMOVED,
    &TYPE_SAFE_SHIFT,
    &TYPE_CHANGED,
    &CONSTRAINT_TIGHTENED,
    &CONSTRAINT_RELAXED,
    &CONSTRAINT_CHANGED,
];

/// Nested schemas deeper than this are not compared further (documents are depth-limited at
/// parse time, so this only guards pathological `$ref` chains).
const MAX_SCHEMA_DEPTH: usize = 256;

const UPPER_BOUNDS: &[&str] = &[
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
];
const LOWER_BOUNDS: &[&str] = &[
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
    "multipleOf",
];
/// Zalando's open enum extension, compared by its own rule rather than as documentation.
const EXTENSIBLE_ENUM: &str = "x-extensible-enum";
/// pattern, format, uniqueItems: judged by presence (see `compare_presence_constraints`).
const PRESENCE_CONSTRAINTS: [&str; 3] = ["pattern", "format", "uniqueItems"];

// The keywords each schema rule judges. The catch-all loop of `compare_keywords` skips every
// keyword a rule lists (see `modelled`), so a keyword gains a dedicated comparison by being
// listed here; documentation keywords are listed by `documentation-changed` and
// `deprecated-changed` and judged by that loop.
const TYPE_KEYWORDS: &[&str] = &["type"];
const ENUM_KEYWORDS: &[&str] = &["enum", "const"];
const EXTENSIBLE_ENUM_KEYWORDS: &[&str] = &["enum", "const", EXTENSIBLE_ENUM];
const CONSTRAINT_KEYWORDS: &[&str] = &[
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
    "multipleOf",
    "pattern",
    "format",
    "uniqueItems",
    "additionalProperties",
    "enum",
    "const",
    "nonNull",
];
/// Keywords the walker descends through without a rule of their own.
const STRUCTURAL: &[&str] = &["$ref", "arguments"];

pub static DEFINITION_RENAMED: Rule = Rule::new(
    "definition-renamed",
    Info,
    Side::Schema,
    "A schema moved to a definition of another name, was inlined, or was extracted into a definition, and its resolved schema is identical (the fingerprint still moves: definition names are part of it).",
);

pub static SCHEMA_RESPELLED: Rule = Rule::new(
    "schema-respelled",
    Info,
    Side::Schema,
    "A schema states the same values another way: `maximum: 9` ↔ `exclusiveMaximum: 10` on an integer, `anyOf: [T, {\"type\": \"null\"}]` ↔ T with `\"null\"` in its type.",
);

pub static READ_WRITE_ONLY_CHANGED: Rule = Rule::new(
    "read-write-only-changed",
    Breaking,
    Side::Schema,
    "A schema's readOnly or writeOnly flag changed.",
)
.keywords(&["readOnly", "writeOnly"]);

pub static REQUEST_CONSTRAINT_CHANGED: Rule = Rule::new(
    "request-constraint-changed",
    Breaking,
    Side::Request,
    "A request schema constraint (pattern, format, ...) changed in a way that cannot be proven wider.",
)
.conservative()
.keywords(CONSTRAINT_KEYWORDS);

pub static REQUEST_CONSTRAINT_RELAXED: Rule = Rule::new(
    "request-constraint-relaxed",
    Compatible,
    Side::Request,
    "A request schema constraint was relaxed or removed (larger maximum, smaller minimum, pattern removed).",
)
.keywords(CONSTRAINT_KEYWORDS);

pub static REQUEST_CONSTRAINT_TIGHTENED: Rule = Rule::new(
    "request-constraint-tightened",
    Breaking,
    Side::Request,
    "A request schema constraint was added or tightened (smaller maximum, pattern added, additionalProperties false).",
)
.keywords(CONSTRAINT_KEYWORDS);

pub static REQUEST_DEFAULT_CHANGED: Rule = Rule::new(
    "request-default-changed",
    Breaking,
    Side::Request,
    "The default of a request value changed, so callers that omit it get different behaviour.",
)
.keywords(&["default"]);

pub static REQUIRED_VALUE_DEFAULT_CHANGED: Rule = Rule::new(
    "required-value-default-changed",
    Compatible,
    Side::Schema,
    "The default of a property callers were required to send changed (typically set when it became optional, as `x: T | None = None`): no existing call omitted it, so none behaves differently.",
);

pub static REQUEST_ENUM_VALUE_ADDED: Rule = Rule::new(
    "request-enum-value-added",
    Compatible,
    Side::Request,
    "A request enum accepts a new value.",
)
.keywords(ENUM_KEYWORDS);

pub static REQUEST_ENUM_VALUE_REMOVED: Rule = Rule::new(
    "request-enum-value-removed",
    Breaking,
    Side::Request,
    "A request enum no longer accepts a value callers may send.",
)
.keywords(EXTENSIBLE_ENUM_KEYWORDS);

pub static READ_WRITE_ONLY_SIDE_IGNORED: Rule = Rule::new(
    "read-write-only-side-ignored",
    Info,
    Side::Schema,
    "A readOnly property was added, removed or changed requiredness in a request schema, or a writeOnly property in a response schema: callers never send (or receive) it.",
);

pub static REQUEST_PROPERTY_ADDED_OPTIONAL: Rule = Rule::new(
    "request-property-added-optional",
    Compatible,
    Side::Request,
    "A request schema gained an optional property.",
)
.keywords(&["properties"]);

pub static REQUEST_PROPERTY_ADDED_REQUIRED: Rule = Rule::new(
    "request-property-added-required",
    Breaking,
    Side::Request,
    "A request schema gained a required property; existing callers do not send it.",
)
.keywords(&["properties", "required"]);

pub static REQUEST_PROPERTY_BECAME_OPTIONAL: Rule = Rule::new(
    "request-property-became-optional",
    Compatible,
    Side::Request,
    "A request property is no longer required.",
)
.keywords(&["required"]);

pub static REQUEST_PROPERTY_BECAME_REQUIRED: Rule = Rule::new(
    "request-property-became-required",
    Breaking,
    Side::Request,
    "A request property became required.",
)
.keywords(&["required"]);

pub static REQUEST_PROPERTY_REMOVED: Rule = Rule::new(
    "request-property-removed",
    Breaking,
    Side::Request,
    "A request schema lost a property callers may send.",
)
.keywords(&["properties"]);

pub static REQUEST_TYPE_CHANGED: Rule = Rule::new(
    "request-type-changed",
    Breaking,
    Side::Request,
    "A request schema's type was narrowed or changed.",
)
.keywords(TYPE_KEYWORDS);

pub static REQUEST_TYPE_WIDENED: Rule = Rule::new(
    "request-type-widened",
    Compatible,
    Side::Request,
    "A request schema accepts more types (e.g. integer to number, or null added).",
)
.keywords(TYPE_KEYWORDS);

pub static RESPONSE_CONSTRAINT_CHANGED: Rule = Rule::new(
    "response-constraint-changed",
    Breaking,
    Side::Response,
    "A response schema constraint (pattern, format, ...) changed in a way that cannot be proven narrower.",
)
.conservative()
.keywords(CONSTRAINT_KEYWORDS);

pub static RESPONSE_CONSTRAINT_RELAXED: Rule = Rule::new(
    "response-constraint-relaxed",
    Breaking,
    Side::Response,
    "A response schema constraint was relaxed or removed; callers may receive values they did not expect.",
)
.keywords(CONSTRAINT_KEYWORDS);

pub static RESPONSE_CONSTRAINT_TIGHTENED: Rule = Rule::new(
    "response-constraint-tightened",
    Compatible,
    Side::Response,
    "A response schema constraint was added or tightened.",
)
.keywords(CONSTRAINT_KEYWORDS);

pub static RESPONSE_DEFAULT_CHANGED: Rule = Rule::new(
    "response-default-changed",
    Info,
    Side::Response,
    "The default of a response value changed.",
)
.keywords(&["default"]);

pub static RESPONSE_ENUM_VALUE_ADDED: Rule = Rule::new(
    "response-enum-value-added",
    Breaking,
    Side::Response,
    "A response enum gained a value callers may not handle.",
)
.keywords(ENUM_KEYWORDS);

pub static RESPONSE_ENUM_VALUE_REMOVED: Rule = Rule::new(
    "response-enum-value-removed",
    Compatible,
    Side::Response,
    "A response enum lost a value.",
)
.keywords(EXTENSIBLE_ENUM_KEYWORDS);

pub static RESPONSE_PROPERTY_ADDED: Rule = Rule::new(
    "response-property-added",
    Compatible,
    Side::Response,
    "A response schema gained a property.",
)
.keywords(&["properties"]);

pub static RESPONSE_PROPERTY_BECAME_OPTIONAL: Rule = Rule::new(
    "response-property-became-optional",
    Breaking,
    Side::Response,
    "A response property is no longer guaranteed.",
)
.keywords(&["required"]);

pub static RESPONSE_PROPERTY_BECAME_REQUIRED: Rule = Rule::new(
    "response-property-became-required",
    Compatible,
    Side::Response,
    "A response property is now always present.",
)
.keywords(&["required"]);

pub static RESPONSE_PROPERTY_REMOVED: Rule = Rule::new(
    "response-property-removed",
    Breaking,
    Side::Response,
    "A response schema lost a property callers may read.",
)
.keywords(&["properties"]);

pub static RESPONSE_TYPE_CHANGED: Rule = Rule::new(
    "response-type-changed",
    Breaking,
    Side::Response,
    "A response schema's type was widened or changed (e.g. integer to number, or null added).",
)
.keywords(TYPE_KEYWORDS);

pub static RESPONSE_TYPE_NARROWED: Rule = Rule::new(
    "response-type-narrowed",
    Compatible,
    Side::Response,
    "A response schema returns fewer types.",
)
.keywords(TYPE_KEYWORDS);

pub static REQUEST_BRANCH_ADDED: Rule = Rule::new(
    "request-branch-added",
    Compatible,
    Side::Request,
    "A request schema's anyOf (or oneOf of provably disjoint branches) gained a branch: the caller may send more.",
);

pub static REQUEST_BRANCH_REMOVED: Rule = Rule::new(
    "request-branch-removed",
    Breaking,
    Side::Request,
    "A request schema's anyOf (or oneOf of provably disjoint branches) lost a branch: what callers send may be rejected.",
);

pub static RESPONSE_BRANCH_ADDED: Rule = Rule::new(
    "response-branch-added",
    Breaking,
    Side::Response,
    "A response schema's anyOf (or oneOf of provably disjoint branches) gained a branch: callers may receive a shape they do not handle.",
);

pub static RESPONSE_BRANCH_REMOVED: Rule = Rule::new(
    "response-branch-removed",
    Compatible,
    Side::Response,
    "A response schema's anyOf (or oneOf of provably disjoint branches) lost a branch: callers receive less.",
);

pub static SCHEMA_COMPOSITION_CHANGED: Rule = Rule::new(
    "schema-composition-changed",
    Breaking,
    Side::Schema,
    "allOf/anyOf/oneOf/prefixItems changed shape; not provably safe.",
)
.conservative()
.keywords(&["allOf", "anyOf", "oneOf", "prefixItems", "items"]);

pub static SCHEMA_KEYWORD_CHANGED: Rule = Rule::new(
    "schema-keyword-changed",
    Breaking,
    Side::Schema,
    "A JSON Schema keyword the classifier does not model changed.",
)
.conservative();

/// A kind's check of its own schema keywords, called on every pair of schema objects the
/// walker compares (GraphQL directives, OData facets).
pub type KeywordHook =
    fn(&mut SchemaDiffer, &Map<String, Value>, &Map<String, Value>, Direction, &str, &mut Emitter);

/// A kind's nominal check of two schemas a caller sends (GraphQL: an argument's or input
/// field's named type), called first on every pair of request schemas when the differ judges
/// types nominally ([`SchemaDiffer::nominal_types`]); `true` when it judged the pair (the walk
/// does not descend into it).
pub type NamedTypeHook = fn(&mut SchemaDiffer, &Value, &Value, &str, &mut Emitter) -> bool;

/// What the walker needs from the rest of `core/diff`, given as data (`diff::SCHEMA_WIRING`).
pub struct SchemaWiring {
    /// The nominal check of request schemas (GraphQL's named types).
    pub named_type_hook: Option<NamedTypeHook>,
    /// Keywords a dedicated comparison judges (the catch-all loop skips them): every keyword a
    /// registered rule lists, but the documentation ones, plus the structural ones (`$ref`,
    /// `arguments`).
    pub modelled: HashSet<&'static str>,
    /// The kinds' keyword checks.
    pub keyword_hooks: Vec<KeywordHook>,
}

/// The modelled keywords of `rules`: every keyword one of them lists, but those of the
/// documentation rules (`documentation-changed`, `deprecated-changed`), plus the structural
/// ones.
pub fn modelled_keywords<'r>(rules: impl IntoIterator<Item = &'r Rule>) -> HashSet<&'static str> {
    rules
        .into_iter()
        .filter(|r| {
            !std::ptr::eq(*r, &DOCUMENTATION_CHANGED) && !std::ptr::eq(*r, &DEPRECATED_CHANGED)
        })
        .flat_map(|r| r.keywords.iter().copied())
        .chain(STRUCTURAL.iter().copied())
        .collect()
}

/// Keywords the catch-all loop judges as documentation (as does any `x-` extension).
fn documentation_rule(keyword: &str) -> Option<&'static Rule> {
    if DEPRECATED_CHANGED.keywords.contains(&keyword) {
        Some(&DEPRECATED_CHANGED)
    } else if DOCUMENTATION_CHANGED.keywords.contains(&keyword) || keyword.starts_with("x-") {
        Some(&DOCUMENTATION_CHANGED)
    } else {
        None
    }
}

pub struct SchemaDiffer<'d> {
    wiring: &'d SchemaWiring,
    old_defs: &'d BTreeMap<String, Value>,
    new_defs: &'d BTreeMap<String, Value>,
    /// (old ref, new ref, direction) already compared (or being compared: this ends cycles).
    /// Keyed by whether the walk is inside a value the direction never carries too: a
    /// definition compared there (its changes side-ignored) is compared again where it is
    /// carried.
    done: HashSet<(String, String, Direction, bool)>,
    /// Whether a definition and everything it reaches is byte-identical on both sides.
    unchanged_closure: HashMap<String, bool>,
    /// Definitions (by pointer, either side) in which a change was reported.
    pub changed_definitions: BTreeSet<String>,
    current_definition: Vec<(String, String)>,
    /// Whether request schemas are typed nominally (GraphQL: a variable's declared type must
    /// name the argument's type), so [`SchemaWiring::named_type_hook`] runs.
    nominal: bool,
    /// Inside a schema the direction never carries (readOnly in what a caller sends,
    /// writeOnly in what it receives): directed rules become `read-write-only-side-ignored`.
    not_carried: bool,
}

impl<'d> SchemaDiffer<'d> {
    pub fn new(
        old_defs: &'d BTreeMap<String, Value>,
        new_defs: &'d BTreeMap<String, Value>,
        wiring: &'d SchemaWiring,
    ) -> Self {
        SchemaDiffer {
            wiring,
            old_defs,
            new_defs,
            done: HashSet::new(),
            unchanged_closure: HashMap::new(),
            changed_definitions: BTreeSet::new(),
            current_definition: Vec::new(),
            nominal: false,
            not_carried: false,
        }
    }

    /// Judges request schemas nominally too (GraphQL contracts).
    pub fn nominal_types(mut self, on: bool) -> Self {
        self.nominal = on;
        self
    }

    /// Compares two schemas found at `path`.
    pub fn compare(
        &mut self,
        old: &Value,
        new: &Value,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
    ) {
        self.compare_at(old, new, dir, path, out, 0);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit(
        &mut self,
        out: &mut Emitter,
        rule: &'static Rule,
        path: &str,
        kind: ChangeKind,
        before: Option<Value>,
        after: Option<Value>,
        message: String,
    ) {
        if let Some((o, n)) = self.current_definition.last() {
            self.changed_definitions.insert(o.clone());
            self.changed_definitions.insert(n.clone());
        }
        let directed = DIRECTED
            .iter()
            .any(|d| std::ptr::eq(d.request, rule) || std::ptr::eq(d.response, rule));
        if self.not_carried && directed {
            out.emit(
                &READ_WRITE_ONLY_SIDE_IGNORED,
                path,
                kind,
                before,
                after,
                format!("{message} (not carried in this direction: readOnly values are never sent, writeOnly values never received)"),
            );
            return;
        }
        out.emit(rule, path, kind, before, after, message);
    }

    fn compare_at(
        &mut self,
        old: &Value,
        new: &Value,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        if depth > MAX_SCHEMA_DEPTH {
            return;
        }
        if self.nominal && dir == Direction::Request && old != new {
            if let Some(hook) = self.wiring.named_type_hook {
                if hook(self, old, new, path, out) {
                    return;
                }
            }
        }
        if old != new
            && (null_wrapped(old, self.old_defs).is_some()
                || null_wrapped(new, self.new_defs).is_some())
        {
            self.compare_nullable(old, new, dir, path, out, depth);
            return;
        }
        // A bare reference on one side, the same reference wrapped in a one-branch `allOf`
        // with keywords beside it on the other (how OData states a non-null structured return
        // value): the referenced schemas are compared, then the keywords beside the wrapper
        // against none.
        let wrapped = |v: &Value| -> Option<(Value, Value)> {
            let map = v.as_object()?;
            let [inner] = map.get("allOf")?.as_array()?.as_slice() else {
                return None;
            };
            bare_ref(inner)?;
            let rest: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| k.as_str() != "allOf")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Some((inner.clone(), Value::Object(rest)))
        };
        // The bare side's keywords beside the reference are those of its target.
        let beside = |bare: &Value, rest: &Value, defs: &BTreeMap<String, Value>| -> Value {
            let target = resolve(bare, defs);
            let keys = rest.as_object().into_iter().flat_map(|m| m.keys());
            Value::Object(
                keys.filter_map(|k| target.get(k).map(|v| (k.clone(), v.clone())))
                    .collect(),
            )
        };
        let lifted = match (bare_ref(old), bare_ref(new)) {
            (Some(_), None) => wrapped(new).map(|(inner, rest)| {
                let old_rest = beside(old, &rest, self.old_defs);
                ((old.clone(), old_rest), (inner, rest))
            }),
            (None, Some(_)) => wrapped(old).map(|(inner, rest)| {
                let new_rest = beside(new, &rest, self.new_defs);
                ((inner, rest), (new.clone(), new_rest))
            }),
            _ => None,
        };
        if let Some(((old_inner, old_rest), (new_inner, new_rest))) = lifted {
            self.compare_at(&old_inner, &new_inner, dir, path, out, depth + 1);
            self.compare_keywords(&old_rest, &new_rest, dir, path, out, depth + 1);
            return;
        }
        let old_ref = ref_of(old);
        let new_ref = ref_of(new);
        if old_ref != new_ref
            && (old_ref.is_some() || new_ref.is_some())
            && self.resolved_equal(old, new)
        {
            let name = |r: Option<&str>, other: Option<&str>| match (r, other) {
                (Some(r), _) => pointer_path(r),
                (None, _) => "an inline schema".to_string(),
            };
            let (from, to) = (name(old_ref, new_ref), name(new_ref, old_ref));
            self.emit(
                out,
                &DEFINITION_RENAMED,
                path,
                ChangeKind::DefinitionRenamed,
                Some(json!(from)),
                Some(json!(to)),
                format!("The schema at {path} moved from {from} to {to}; its resolved schema is identical."),
            );
            return;
        }
        match (old_ref, new_ref) {
            (Some(o), Some(n)) => {
                if o == n && self.closure_unchanged(o) {
                    return;
                }
                if !self
                    .done
                    .insert((o.to_string(), n.to_string(), dir, self.not_carried))
                {
                    return;
                }
                // The definition maps outlive `self`'s borrow, so no copy is needed.
                let (old_defs, new_defs) = (self.old_defs, self.new_defs);
                let empty = json!({});
                let old_target = old_defs.get(o).unwrap_or(&empty);
                let new_target = new_defs.get(n).unwrap_or(&empty);
                let def_path = pointer_path(n);
                self.current_definition.push((o.to_string(), n.to_string()));
                out.enter_definition(o, n);
                self.compare_keywords(old_target, new_target, dir, &def_path, out, depth + 1);
                out.leave_definition();
                self.current_definition.pop();
            }
            (Some(o), None) => {
                let defs = self.old_defs;
                let empty = json!({});
                self.compare_at(
                    defs.get(o).unwrap_or(&empty),
                    new,
                    dir,
                    path,
                    out,
                    depth + 1,
                );
            }
            (None, Some(n)) => {
                let defs = self.new_defs;
                let empty = json!({});
                self.compare_at(
                    old,
                    defs.get(n).unwrap_or(&empty),
                    dir,
                    path,
                    out,
                    depth + 1,
                );
            }
            (None, None) => {
                if old == new {
                    // Identical text can still reach definitions that changed (in the
                    // direction they are used: GraphQL `arguments` are what a caller sends).
                    let mut refs = BTreeSet::new();
                    collect_directed_refs(old, dir, &mut refs);
                    for (r, ref_dir) in refs {
                        let node = json!({ "$ref": r });
                        self.compare_at(&node, &node, ref_dir, path, out, depth + 1);
                    }
                    return;
                }
                self.compare_keywords(old, new, dir, path, out, depth);
            }
        }
    }

    /// Two schemas of which at least one is `anyOf: [T, {"type": "null"}]` (how pydantic and
    /// FastMCP write `Optional[T]`, how GraphQL and OData write a nullable reference): judged
    /// as T plus null before any branch pairing, so T is compared with the other side's
    /// schema (or its T) and null gained or lost is one type change by direction.
    fn compare_nullable(
        &mut self,
        old: &Value,
        new: &Value,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let (old_core, old_null) = split_null(old, self.old_defs);
        let (new_core, new_null) = split_null(new, self.new_defs);
        let before = out.changes.len();
        self.compare_at(&old_core, &new_core, dir, path, out, depth + 1);
        if old_null != new_null {
            let rule = if dir.pick(new_null, old_null) {
                TYPE_SAFE_SHIFT.pick(dir)
            } else {
                TYPE_CHANGED.pick(dir)
            };
            self.emit(
                out,
                rule,
                &format!("{path}.type"),
                ChangeKind::TypeChanged,
                Some(json!(old_null)),
                Some(json!(new_null)),
                format!(
                    "The schema at {path} {} null.",
                    if new_null {
                        "now allows"
                    } else {
                        "no longer allows"
                    }
                ),
            );
        } else if out.changes.len() == before && old_core == new_core {
            self.emit(
                out,
                &SCHEMA_RESPELLED,
                path,
                ChangeKind::SchemaChanged,
                Some(old.clone()),
                Some(new.clone()),
                format!("The schema at {path} allows the same values, spelled otherwise (anyOf with null)."),
            );
        }
    }

    /// Whether two schemas are the same once every `$ref` is followed on its own side (a
    /// pair of references already being compared counts as equal, which ends cycles).
    fn resolved_equal(&self, old: &Value, new: &Value) -> bool {
        fn eq(
            o: &Value,
            n: &Value,
            defs: (&BTreeMap<String, Value>, &BTreeMap<String, Value>),
            seen: &mut BTreeSet<(String, String)>,
            depth: usize,
        ) -> bool {
            if depth > MAX_SCHEMA_DEPTH {
                return false;
            }
            let (or, nr) = (bare_ref(o), bare_ref(n));
            if or.is_some() || nr.is_some() {
                if let (Some(a), Some(b)) = (or, nr) {
                    if !seen.insert((a.to_string(), b.to_string())) {
                        return true;
                    }
                }
                let o = match or {
                    Some(r) => match defs.0.get(r) {
                        Some(t) => t,
                        None => return false,
                    },
                    None => o,
                };
                let n = match nr {
                    Some(r) => match defs.1.get(r) {
                        Some(t) => t,
                        None => return false,
                    },
                    None => n,
                };
                return eq(o, n, defs, seen, depth + 1);
            }
            match (o, n) {
                (Value::Object(a), Value::Object(b)) => {
                    a.len() == b.len()
                        && a.iter()
                            .all(|(k, x)| b.get(k).is_some_and(|y| eq(x, y, defs, seen, depth + 1)))
                }
                (Value::Array(a), Value::Array(b)) => {
                    a.len() == b.len()
                        && a.iter()
                            .zip(b)
                            .all(|(x, y)| eq(x, y, defs, seen, depth + 1))
                }
                _ => o == n,
            }
        }
        eq(
            old,
            new,
            (self.old_defs, self.new_defs),
            &mut BTreeSet::new(),
            0,
        )
    }

    fn closure_unchanged(&mut self, reference: &str) -> bool {
        if let Some(known) = self.unchanged_closure.get(reference) {
            return *known;
        }
        let mut seen = BTreeSet::new();
        let mut stack = vec![reference.to_string()];
        let mut unchanged = true;
        while let Some(r) = stack.pop() {
            if !seen.insert(r.clone()) {
                continue;
            }
            match (self.old_defs.get(&r), self.new_defs.get(&r)) {
                (Some(o), Some(n)) if o == n => {
                    let mut refs = BTreeSet::new();
                    collect_refs(o, &mut refs);
                    stack.extend(refs);
                }
                (None, None) => {}
                _ => {
                    unchanged = false;
                    break;
                }
            }
        }
        self.unchanged_closure
            .insert(reference.to_string(), unchanged);
        unchanged
    }

    fn compare_keywords(
        &mut self,
        old: &Value,
        new: &Value,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let empty = Map::new();
        let (o, n) = match (old, new) {
            (Value::Object(o), Value::Object(n)) => (o, n),
            (Value::Bool(true), Value::Object(n)) => (&empty, n),
            (Value::Object(o), Value::Bool(true)) => (o, &empty),
            _ => {
                if old != new {
                    self.emit(
                        out,
                        constraint_rule(dir, Shift::Changed),
                        path,
                        ChangeKind::SchemaChanged,
                        Some(old.clone()),
                        Some(new.clone()),
                        format!(
                            "The schema at {path} changed in a way that cannot be proven safe."
                        ),
                    );
                }
                return;
            }
        };
        let outer = self.not_carried;
        self.not_carried = outer || self.not_carried(Some(old), Some(new), dir);
        self.compare_keyword_maps(o, n, dir, path, out, depth);
        self.not_carried = outer;
    }

    #[allow(clippy::too_many_arguments)]
    fn compare_keyword_maps(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        self.compare_types(o, n, dir, path, out);
        self.compare_properties(o, n, dir, path, out, depth);
        self.compare_enum(o, n, dir, path, out);
        self.compare_bounds(o, n, dir, path, out);
        self.compare_presence_constraints(o, n, dir, path, out);
        self.compare_additional_properties(o, n, dir, path, out, depth);
        self.compare_items(o, n, dir, path, out, depth);
        for keyword in ["allOf", "anyOf", "oneOf", "prefixItems"] {
            self.compare_composition(keyword, o, n, dir, path, out, depth);
        }
        self.compare_graphql_keywords(o, n, dir, path, out, depth);
        if o.get("default") != n.get("default") {
            let rule = DEFAULT_CHANGED.pick(dir);
            self.emit(
                out,
                rule,
                &format!("{path}.default"),
                ChangeKind::DefaultChanged,
                o.get("default").cloned(),
                n.get("default").cloned(),
                format!("The default at {path} changed."),
            );
        }
        for keyword in ["readOnly", "writeOnly"] {
            if o.get(keyword) != n.get(keyword) {
                self.emit(
                    out,
                    &READ_WRITE_ONLY_CHANGED,
                    &format!("{path}.{keyword}"),
                    ChangeKind::ReadWriteOnlyChanged,
                    o.get(keyword).cloned(),
                    n.get(keyword).cloned(),
                    format!("{keyword} changed at {path}."),
                );
            }
        }
        self.compare_extensible_enum(o, n, dir, path, out);
        let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
        for key in keys {
            if self.wiring.modelled.contains(key.as_str()) || o.get(key) == n.get(key) {
                continue;
            }
            if let Some(rule) = documentation_rule(key) {
                self.emit(
                    out,
                    rule,
                    &format!("{path}.{key}"),
                    ChangeKind::DocumentationChanged,
                    o.get(key).cloned(),
                    n.get(key).cloned(),
                    format!("{key} changed at {path}."),
                );
            } else {
                self.emit(
                    out,
                    &SCHEMA_KEYWORD_CHANGED,
                    &format!("{path}.{key}"),
                    ChangeKind::SchemaKeywordChanged,
                    o.get(key).cloned(),
                    n.get(key).cloned(),
                    format!("Keyword {key} changed at {path}; schemawatch does not model it, so it is treated as breaking."),
                );
            }
        }
    }

    /// GraphQL's two keywords (normalize/graphql): `arguments` of a field (an object schema of
    /// what a caller sends to select it, so compared in the request direction wherever the
    /// field sits) and `nonNull` (an optional input that refuses an explicit null).
    fn compare_graphql_keywords(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        if o.contains_key("arguments") || n.contains_key("arguments") {
            let none = json!({"type": "object"});
            self.compare_at(
                o.get("arguments").unwrap_or(&none),
                n.get("arguments").unwrap_or(&none),
                Direction::Request,
                &format!("{path}.arguments"),
                out,
                depth + 1,
            );
        }
        let wiring = self.wiring;
        for hook in &wiring.keyword_hooks {
            hook(self, o, n, dir, path, out);
        }
        let non_null = |m: &Map<String, Value>| m.get("nonNull") == Some(&Value::Bool(true));
        if non_null(o) != non_null(n) {
            let shift = if non_null(n) {
                Shift::Tightened
            } else {
                Shift::Relaxed
            };
            self.emit(
                out,
                constraint_rule(dir, shift),
                &format!("{path}.nonNull"),
                ChangeKind::ConstraintChanged,
                o.get("nonNull").cloned(),
                n.get("nonNull").cloned(),
                format!(
                    "{path} {} an explicit null.",
                    if non_null(n) {
                        "now refuses"
                    } else {
                        "now accepts"
                    }
                ),
            );
        }
    }

    fn compare_types(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
    ) {
        let (old_types, new_types) = (type_set(o), type_set(n));
        if old_types == new_types {
            return;
        }
        let widened = covers(&new_types, &old_types);
        let narrowed = covers(&old_types, &new_types);
        let rule = if dir.pick(widened, narrowed) {
            TYPE_SAFE_SHIFT.pick(dir)
        } else {
            TYPE_CHANGED.pick(dir)
        };
        let show = |t: &Option<BTreeSet<String>>| match t {
            None => "any".to_string(),
            Some(set) => set.iter().cloned().collect::<Vec<_>>().join("|"),
        };
        self.emit(
            out,
            rule,
            &format!("{path}.type"),
            ChangeKind::TypeChanged,
            Some(o.get("type").cloned().unwrap_or(Value::Null)),
            Some(n.get("type").cloned().unwrap_or(Value::Null)),
            format!(
                "The type at {path} changed from {} to {}.",
                show(&old_types),
                show(&new_types)
            ),
        );
    }

    /// Whether `schema` (following `$ref`s on its side) carries `keyword: true`.
    fn flagged(&self, schema: &Value, old_side: bool, keyword: &str) -> bool {
        let defs = if old_side {
            self.old_defs
        } else {
            self.new_defs
        };
        let mut current = schema;
        for _ in 0..8 {
            if current.get(keyword) == Some(&Value::Bool(true)) {
                return true;
            }
            match ref_of(current).and_then(|r| defs.get(r)) {
                Some(target) => current = target,
                None => return false,
            }
        }
        false
    }

    /// A property the direction never carries: readOnly ones in what a caller sends,
    /// writeOnly ones in what it receives (either side's declaration counts).
    fn not_carried(&self, old: Option<&Value>, new: Option<&Value>, dir: Direction) -> bool {
        let keyword = dir.pick("readOnly", "writeOnly");
        old.is_some_and(|s| self.flagged(s, true, keyword))
            || new.is_some_and(|s| self.flagged(s, false, keyword))
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_not_carried(
        &mut self,
        out: &mut Emitter,
        dir: Direction,
        path: &str,
        kind: ChangeKind,
        before: Option<Value>,
        after: Option<Value>,
        what: String,
    ) {
        let why = dir.pick(
            "readOnly: callers never send it",
            "writeOnly: callers never receive it",
        );
        self.emit(
            out,
            &READ_WRITE_ONLY_SIDE_IGNORED,
            path,
            kind,
            before,
            after,
            format!("{what} ({why})."),
        );
    }

    fn compare_properties(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let empty = Map::new();
        let old_props = o
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let new_props = n
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let old_required = string_set(o.get("required"));
        let new_required = string_set(n.get("required"));
        for (name, old_schema) in old_props {
            let p_at = format!("{path}.properties.{name}");
            match new_props.get(name) {
                // A request value callers had to send: its default never applied to any
                // existing call (pydantic's `x: T` → `x: T | None = None`).
                Some(new_schema)
                    if dir == Direction::Request
                        && old_required.contains(name.as_str())
                        && old_schema.get("default") != new_schema.get("default") =>
                {
                    let without = |v: &Value| {
                        let mut v = v.clone();
                        if let Value::Object(m) = &mut v {
                            m.remove("default");
                        }
                        v
                    };
                    self.compare_at(
                        &without(old_schema),
                        &without(new_schema),
                        dir,
                        &p_at,
                        out,
                        depth + 1,
                    );
                    self.emit(
                        out,
                        &REQUIRED_VALUE_DEFAULT_CHANGED,
                        &format!("{p_at}.default"),
                        ChangeKind::DefaultChanged,
                        old_schema.get("default").cloned(),
                        new_schema.get("default").cloned(),
                        format!("The default at {p_at} changed; the value was required, so no existing call used it."),
                    );
                }
                Some(new_schema) => {
                    self.compare_at(old_schema, new_schema, dir, &p_at, out, depth + 1)
                }
                None if self.not_carried(Some(old_schema), None, dir) => self.emit_not_carried(
                    out,
                    dir,
                    &p_at,
                    ChangeKind::PropertyRemoved,
                    Some(json!(name)),
                    None,
                    format!("Property '{name}' was removed from {path}"),
                ),
                None => {
                    let rule = PROPERTY_REMOVED.pick(dir);
                    self.emit(
                        out,
                        rule,
                        &p_at,
                        ChangeKind::PropertyRemoved,
                        Some(json!(name)),
                        None,
                        format!("Property '{name}' was removed from {path}."),
                    );
                }
            }
        }
        for name in new_props.keys().filter(|k| !old_props.contains_key(*k)) {
            let p_at = format!("{path}.properties.{name}");
            let required = new_required.contains(name.as_str());
            if self.not_carried(None, new_props.get(name), dir) {
                self.emit_not_carried(
                    out,
                    dir,
                    &p_at,
                    ChangeKind::PropertyAdded,
                    None,
                    Some(json!(name)),
                    format!("Property '{name}' was added to {path}"),
                );
                continue;
            }
            let rule = if required {
                PROPERTY_ADDED_REQUIRED.pick(dir)
            } else {
                PROPERTY_ADDED_OPTIONAL.pick(dir)
            };
            let word = if required { "Required" } else { "Optional" };
            self.emit(
                out,
                rule,
                &p_at,
                ChangeKind::PropertyAdded,
                None,
                Some(json!(name)),
                format!("{word} property '{name}' was added to {path}."),
            );
        }
        // Required-ness of properties present on both sides (or declared without properties).
        for name in old_required.symmetric_difference(&new_required) {
            let added_or_removed = old_props.contains_key(*name) != new_props.contains_key(*name);
            if added_or_removed {
                continue;
            }
            let now_required = new_required.contains(name);
            if self.not_carried(old_props.get(*name), new_props.get(*name), dir) {
                let word = if now_required { "required" } else { "optional" };
                self.emit_not_carried(
                    out,
                    dir,
                    &format!("{path}.properties.{name}.required"),
                    ChangeKind::PropertyRequiredChanged,
                    Some(json!(!now_required)),
                    Some(json!(now_required)),
                    format!("Property '{name}' of {path} became {word}"),
                );
                continue;
            }
            let rule = if now_required {
                PROPERTY_BECAME_REQUIRED.pick(dir)
            } else {
                PROPERTY_BECAME_OPTIONAL.pick(dir)
            };
            let word = if now_required { "required" } else { "optional" };
            self.emit(
                out,
                rule,
                &format!("{path}.properties.{name}.required"),
                ChangeKind::PropertyRequiredChanged,
                Some(json!(!now_required)),
                Some(json!(now_required)),
                format!("Property '{name}' of {path} became {word}."),
            );
        }
    }

    fn compare_enum(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
    ) {
        let (old_values, new_values) = (enum_values(o), enum_values(n));
        match (&old_values, &new_values) {
            (None, None) => {}
            (Some(old_set), Some(new_set)) => {
                for (text, value) in new_set.iter().filter(|(t, _)| !old_set.contains_key(*t)) {
                    let rule = ENUM_VALUE_ADDED.pick(dir);
                    self.emit(
                        out,
                        rule,
                        &format!("{path}.enum"),
                        ChangeKind::EnumValueAdded,
                        None,
                        Some(value.clone()),
                        format!("{path} gained the enum value {text}."),
                    );
                }
                for (text, value) in old_set.iter().filter(|(t, _)| !new_set.contains_key(*t)) {
                    let rule = ENUM_VALUE_REMOVED.pick(dir);
                    self.emit(
                        out,
                        rule,
                        &format!("{path}.enum"),
                        ChangeKind::EnumValueRemoved,
                        Some(value.clone()),
                        None,
                        format!("{path} lost the enum value {text}."),
                    );
                }
            }
            (None, Some(_)) | (Some(_), None) => {
                let shift = if old_values.is_none() {
                    Shift::Tightened
                } else {
                    Shift::Relaxed
                };
                self.emit(
                    out,
                    constraint_rule(dir, shift),
                    &format!("{path}.enum"),
                    ChangeKind::EnumChanged,
                    o.get("enum").or_else(|| o.get("const")).cloned(),
                    n.get("enum").or_else(|| n.get("const")).cloned(),
                    format!(
                        "{path} {} a fixed set of values.",
                        if old_values.is_none() {
                            "now allows only"
                        } else {
                            "no longer has"
                        }
                    ),
                );
            }
        }
    }

    /// `x-extensible-enum` (Zalando's guidelines): the listed values may grow, so receivers must
    /// tolerate new ones; a sender that stops accepting a listed value still breaks callers.
    fn compare_extensible_enum(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
    ) {
        let values = |m: &Map<String, Value>| -> BTreeMap<String, Value> {
            m.get(EXTENSIBLE_ENUM)
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .map(|v| (to_canonical_string(v), v.clone()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (before, after) = (values(o), values(n));
        let at = format!("{path}.{EXTENSIBLE_ENUM}");
        for (text, value) in before.iter().filter(|(t, _)| !after.contains_key(*t)) {
            let rule = ENUM_VALUE_REMOVED.pick(dir);
            self.emit(
                out,
                rule,
                &at,
                ChangeKind::EnumValueRemoved,
                Some(value.clone()),
                None,
                format!("{path} lost the extensible enum value {text}."),
            );
        }
        for (text, value) in after.iter().filter(|(t, _)| !before.contains_key(*t)) {
            // Extensible: receivers already handle unknown values, so an addition is safe both ways.
            self.emit(
                out,
                &DOCUMENTATION_CHANGED,
                &at,
                ChangeKind::ExtensibleEnumValueAdded,
                None,
                Some(value.clone()),
                format!("{path} lists the new extensible enum value {text}."),
            );
        }
    }

    fn compare_bounds(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
    ) {
        // Numeric bounds: the effective interval end, whichever keyword states it.
        let integers = |m: &Map<String, Value>| {
            type_set(m).is_some_and(|t| t.iter().all(|t| t == "integer" || t == "null"))
        };
        let integer = integers(o) && integers(n);
        for (inclusive, exclusive, upper) in [
            ("maximum", "exclusiveMaximum", true),
            ("minimum", "exclusiveMinimum", false),
        ] {
            if o.get(inclusive) == n.get(inclusive) && o.get(exclusive) == n.get(exclusive) {
                continue;
            }
            let (before, after) = (
                numeric_end(o, inclusive, exclusive, upper, integer),
                numeric_end(n, inclusive, exclusive, upper, integer),
            );
            let stated = |m: &Map<String, Value>| {
                let kept: Map<String, Value> = [inclusive, exclusive]
                    .iter()
                    .filter_map(|k| m.get(*k).map(|v| (k.to_string(), v.clone())))
                    .collect();
                (!kept.is_empty()).then_some(Value::Object(kept))
            };
            let keyword = if n.contains_key(exclusive) && !n.contains_key(inclusive) {
                exclusive
            } else if n.contains_key(inclusive) || !o.contains_key(exclusive) {
                inclusive
            } else {
                exclusive
            };
            // One keyword on both sides (the usual case): reported as it always was, so
            // change ids stay stable; otherwise both keywords of each side.
            let other = if keyword == inclusive {
                exclusive
            } else {
                inclusive
            };
            let single = !o.contains_key(other) && !n.contains_key(other);
            let (shown_before, shown_after) = if single {
                (o.get(keyword).cloned(), n.get(keyword).cloned())
            } else {
                (stated(o), stated(n))
            };
            let side = if upper { "upper" } else { "lower" };
            let (rule, word) = match (before, after) {
                (Some(Err(())), _) | (_, Some(Err(()))) => {
                    (constraint_rule(dir, Shift::Changed), "changed")
                }
                (b, a) if b == a => (&SCHEMA_RESPELLED, "respelled with the same values"),
                (b, a) => {
                    let looser = match (b, a) {
                        (_, None) => true,
                        (None, Some(_)) => false,
                        (Some(Ok(b)), Some(Ok(a))) => end_looser(b, a, upper),
                        _ => false,
                    };
                    if looser {
                        (constraint_rule(dir, Shift::Relaxed), "relaxed")
                    } else {
                        (constraint_rule(dir, Shift::Tightened), "tightened")
                    }
                }
            };
            let message = if single {
                format!(
                    "{keyword} at {path} {word}: {} → {}.",
                    show(shown_before.as_ref()),
                    show(shown_after.as_ref())
                )
            } else {
                format!(
                    "The {side} bound at {path} {word}: {} → {}.",
                    show(shown_before.as_ref()),
                    show(shown_after.as_ref())
                )
            };
            self.emit(
                out,
                rule,
                &format!("{path}.{keyword}"),
                ChangeKind::ConstraintChanged,
                shown_before,
                shown_after,
                message,
            );
        }
        let others = UPPER_BOUNDS
            .iter()
            .map(|k| (*k, true))
            .chain(LOWER_BOUNDS.iter().map(|k| (*k, false)))
            .filter(|(k, _)| !k.ends_with("imum"));
        for (keyword, upper) in others {
            let (before, after) = (o.get(keyword), n.get(keyword));
            if before == after {
                continue;
            }
            let shift = match (before.and_then(as_f64), after.and_then(as_f64)) {
                (None, Some(_)) => Shift::Tightened,
                (Some(_), None) => Shift::Relaxed,
                (Some(b), Some(a)) if keyword == "multipleOf" => {
                    // A new step that is a multiple of the old one accepts fewer values; one
                    // that divides it accepts every old value and more.
                    if b != 0.0 && (a / b).fract() == 0.0 {
                        Shift::Tightened
                    } else if a != 0.0 && (b / a).fract() == 0.0 {
                        Shift::Relaxed
                    } else {
                        Shift::Changed
                    }
                }
                (Some(b), Some(a)) if a == b => Shift::Changed,
                (Some(b), Some(a)) => {
                    if (a > b) == upper {
                        Shift::Relaxed
                    } else {
                        Shift::Tightened
                    }
                }
                (None, None) => Shift::Changed,
            };
            let word = match shift {
                Shift::Tightened => "tightened",
                Shift::Relaxed => "relaxed",
                Shift::Changed => "changed",
            };
            self.emit(
                out,
                constraint_rule(dir, shift),
                &format!("{path}.{keyword}"),
                ChangeKind::ConstraintChanged,
                before.cloned(),
                after.cloned(),
                format!(
                    "{keyword} at {path} {word}: {} → {}.",
                    show(before),
                    show(after)
                ),
            );
        }
    }

    /// pattern, format, uniqueItems: adding one restricts, removing one relaxes, changing one
    /// cannot be proven either way.
    fn compare_presence_constraints(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
    ) {
        for keyword in PRESENCE_CONSTRAINTS {
            let normalize = |v: Option<&Value>| match v {
                Some(Value::Bool(false)) if keyword == "uniqueItems" => None,
                other => other.cloned(),
            };
            let (before, after) = (normalize(o.get(keyword)), normalize(n.get(keyword)));
            if before == after {
                continue;
            }
            let shift = match (&before, &after) {
                (None, Some(_)) => Shift::Tightened,
                (Some(_), None) => Shift::Relaxed,
                (Some(Value::String(b)), Some(Value::String(a))) if keyword == "format" => {
                    if width_within(b, a) {
                        Shift::Relaxed
                    } else if width_within(a, b) {
                        Shift::Tightened
                    } else {
                        Shift::Changed
                    }
                }
                _ => Shift::Changed,
            };
            let text = format!(
                "{keyword} at {path}: {} → {}.",
                show(before.as_ref()),
                show(after.as_ref())
            );
            self.emit(
                out,
                constraint_rule(dir, shift),
                &format!("{path}.{keyword}"),
                ChangeKind::ConstraintChanged,
                before,
                after,
                text,
            );
        }
    }

    fn compare_additional_properties(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let (before, after) = (o.get("additionalProperties"), n.get("additionalProperties"));
        if before == after {
            if let (Some(b), Some(a)) = (before, after) {
                self.compare_at(
                    b,
                    a,
                    dir,
                    &format!("{path}.additionalProperties"),
                    out,
                    depth + 1,
                );
            }
            return;
        }
        // Absent, `true` and `{}` all allow anything.
        let allows_all = |v: Option<&Value>| match v {
            None | Some(Value::Bool(true)) => true,
            Some(Value::Object(m)) => m.is_empty(),
            _ => false,
        };
        let forbids = |v: Option<&Value>| matches!(v, Some(Value::Bool(false)));
        let at = format!("{path}.additionalProperties");
        let shift = if allows_all(before) && allows_all(after) {
            return;
        } else if allows_all(after) || forbids(before) {
            Shift::Relaxed
        } else if allows_all(before) || forbids(after) {
            Shift::Tightened
        } else {
            // Both are schemas: compare them as the values they describe.
            if let (Some(b), Some(a)) = (before, after) {
                self.compare_at(b, a, dir, &at, out, depth + 1);
            }
            return;
        };
        self.emit(
            out,
            constraint_rule(dir, shift),
            &at,
            ChangeKind::AdditionalPropertiesChanged,
            before.cloned(),
            after.cloned(),
            format!(
                "additionalProperties at {path}: {} → {}.",
                show(before),
                show(after)
            ),
        );
    }

    fn compare_items(
        &mut self,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let at = format!("{path}.items");
        match (o.get("items"), n.get("items")) {
            (None, None) => {}
            (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    self.compare_at(x, y, dir, &format!("{at}.{i}"), out, depth + 1);
                }
            }
            (Some(Value::Array(_)), _) | (_, Some(Value::Array(_))) => {
                self.emit(
                    out,
                    &SCHEMA_COMPOSITION_CHANGED,
                    &at,
                    ChangeKind::ItemsChanged,
                    o.get("items").cloned(),
                    n.get("items").cloned(),
                    format!("The tuple items at {path} changed shape."),
                );
            }
            (b, a) => {
                let empty = json!({});
                self.compare_at(
                    b.unwrap_or(&empty),
                    a.unwrap_or(&empty),
                    dir,
                    &at,
                    out,
                    depth + 1,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn compare_composition(
        &mut self,
        keyword: &str,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let at = format!("{path}.{keyword}");
        if let (Some(Value::Array(a)), Some(Value::Array(b))) = (o.get(keyword), n.get(keyword)) {
            // GraphQL unions and interfaces keep their own reading: a removed member breaks
            // the queries that name it, whichever way data flows.
            let graphql = out.kind() == Some(crate::core::model::Kind::Graphql);
            if a != b
                && !graphql
                && (keyword == "anyOf" || (keyword == "oneOf" && self.disjoint_branches(a, b)))
            {
                self.compare_paired_branches(keyword, a, b, dir, path, out, depth);
                return;
            }
        }
        match (o.get(keyword), n.get(keyword)) {
            (None, None) => {}
            (Some(Value::Array(a)), Some(Value::Array(b))) if a != b => {
                if let (true, Some(old_refs), Some(new_refs)) = (
                    matches!(keyword, "anyOf" | "oneOf"),
                    bare_refs(a),
                    bare_refs(b),
                ) {
                    // Alternatives that are all named types (GraphQL unions and interfaces,
                    // OpenAPI oneOf of components) and share a member or changed in number:
                    // pair them by name, not by position, so a member added or removed does
                    // not hide changes in the others. (Same number, nothing shared: compared
                    // by position below, so a renamed component is compared by content.)
                    if a.len() != b.len() || !old_refs.is_disjoint(&new_refs) {
                        self.compare_named_branches(&at, &old_refs, &new_refs, dir, out, depth);
                        return;
                    }
                }
                if a.len() == b.len() {
                    for (i, (x, y)) in a.iter().zip(b).enumerate() {
                        self.compare_at(x, y, dir, &format!("{at}.{i}"), out, depth + 1);
                    }
                } else {
                    let text = format!(
                        "{keyword} at {path} changed from {} to {} branches; not provably safe.",
                        a.len(),
                        b.len()
                    );
                    self.emit(
                        out,
                        &SCHEMA_COMPOSITION_CHANGED,
                        &at,
                        ChangeKind::CompositionChanged,
                        Some(json!(a.len())),
                        Some(json!(b.len())),
                        text,
                    );
                }
            }
            (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    self.compare_at(x, y, dir, &format!("{at}.{i}"), out, depth + 1);
                }
            }
            (before, after) => {
                let count = |v: Option<&Value>| v.and_then(Value::as_array).map_or(0, Vec::len);
                self.emit(
                    out,
                    &SCHEMA_COMPOSITION_CHANGED,
                    &at,
                    ChangeKind::CompositionChanged,
                    Some(json!(count(before))),
                    Some(json!(count(after))),
                    format!(
                        "{keyword} at {path} changed from {} to {} branches; not provably safe.",
                        count(before),
                        count(after)
                    ),
                );
            }
        }
    }
}

impl SchemaDiffer<'_> {
    /// anyOf, and oneOf of provably disjoint branches: old and new branches are paired
    /// (identical ones first, then ones with the same discriminating signature, then, when as
    /// many are left on both sides, by position) and each pair compared; a branch left over
    /// was added or removed, judged by direction (a request may gain alternatives, a response
    /// may lose them).
    #[allow(clippy::too_many_arguments)]
    fn compare_paired_branches(
        &mut self,
        keyword: &str,
        a: &[Value],
        b: &[Value],
        dir: Direction,
        path: &str,
        out: &mut Emitter,
        depth: usize,
    ) {
        let at = format!("{path}.{keyword}");
        let mut old_left: Vec<usize> = (0..a.len()).collect();
        let mut new_left: Vec<usize> = (0..b.len()).collect();
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        let mut take =
            |old_left: &mut Vec<usize>, new_left: &mut Vec<usize>, i: usize, j: usize| {
                old_left.retain(|x| *x != i);
                new_left.retain(|x| *x != j);
                pairs.push((i, j));
            };
        for i in old_left.clone() {
            if let Some(&j) = new_left.iter().find(|j| b[**j] == a[i]) {
                take(&mut old_left, &mut new_left, i, j);
            }
        }
        // A named branch (`{"$ref": ...}`) pairs only with the same name: the name is what
        // tells alternatives apart (a discriminator without mapping uses it, GraphQL unions
        // are named types), so another name is a branch removed and one added even when the
        // two definitions read alike.
        let (old_named, rest): (Vec<usize>, Vec<usize>) =
            old_left.iter().partition(|i| bare_ref(&a[**i]).is_some());
        old_left = rest;
        let (new_named, rest): (Vec<usize>, Vec<usize>) =
            new_left.iter().partition(|j| bare_ref(&b[**j]).is_some());
        new_left = rest;
        let (old_defs, new_defs) = (self.old_defs, self.new_defs);
        let old_sigs: Vec<Option<String>> =
            a.iter().map(|x| signature(resolve(x, old_defs))).collect();
        let new_sigs: Vec<Option<String>> =
            b.iter().map(|x| signature(resolve(x, new_defs))).collect();
        let unique = |left: &[usize], sigs: &[Option<String>], sig: &String| {
            left.iter()
                .filter(|k| sigs[**k].as_ref() == Some(sig))
                .count()
                == 1
        };
        for i in old_left.clone() {
            let Some(sig) = old_sigs[i].clone() else {
                continue;
            };
            if !unique(&old_left, &old_sigs, &sig) || !unique(&new_left, &new_sigs, &sig) {
                continue;
            }
            if let Some(&j) = new_left
                .iter()
                .find(|j| new_sigs[**j].as_ref() == Some(&sig))
            {
                take(&mut old_left, &mut new_left, i, j);
            }
        }
        if old_left.len() == new_left.len() {
            for (i, j) in old_left.clone().into_iter().zip(new_left.clone()) {
                take(&mut old_left, &mut new_left, i, j);
            }
        }
        old_left.extend(old_named);
        new_left.extend(new_named);
        old_left.sort_unstable();
        new_left.sort_unstable();
        pairs.sort_unstable();
        for (i, j) in pairs {
            self.compare_at(&a[i], &b[j], dir, &format!("{at}.{j}"), out, depth + 1);
        }
        let describe = |v: &Value| match ref_of(v) {
            Some(r) if v.as_object().is_some_and(|m| m.len() == 1) => json!(pointer_path(r)),
            _ => v.clone(),
        };
        for j in new_left {
            let rule = BRANCH_ADDED.pick(dir);
            let effect = dir.pick("a caller may now send it", "a caller may now receive it");
            let branch = describe(&b[j]);
            let text = format!(
                "{keyword} at {path} gained the branch {}; {effect}.",
                show(Some(&branch))
            );
            self.emit(
                out,
                rule,
                &at,
                ChangeKind::BranchAdded,
                None,
                Some(branch),
                text,
            );
        }
        for i in old_left {
            let rule = BRANCH_REMOVED.pick(dir);
            let effect = dir.pick(
                "what callers send in that shape may be rejected",
                "callers no longer receive it",
            );
            let branch = describe(&a[i]);
            let text = format!(
                "{keyword} at {path} lost the branch {}; {effect}.",
                show(Some(&branch))
            );
            self.emit(
                out,
                rule,
                &at,
                ChangeKind::BranchRemoved,
                Some(branch),
                None,
                text,
            );
        }
    }

    /// Whether, on each side, every two branches are provably disjoint: no value matches two
    /// of them, so oneOf accepts what anyOf accepts and can be compared as anyOf.
    fn disjoint_branches(&self, a: &[Value], b: &[Value]) -> bool {
        [(a, self.old_defs), (b, self.new_defs)]
            .into_iter()
            .all(|(branches, defs)| {
                let maps: Option<Vec<&Map<String, Value>>> = branches
                    .iter()
                    .map(|x| resolve(x, defs).as_object())
                    .collect();
                maps.is_some_and(|maps| {
                    maps.iter()
                        .enumerate()
                        .all(|(i, x)| maps.iter().skip(i + 1).all(|y| disjoint(x, y)))
                })
            })
    }

    /// Compares `$ref`-only branch lists by name: the common ones recursively, and one
    /// `schema-composition-changed` naming the branches added and removed.
    fn compare_named_branches(
        &mut self,
        at: &str,
        old_refs: &BTreeSet<&str>,
        new_refs: &BTreeSet<&str>,
        dir: Direction,
        out: &mut Emitter,
        depth: usize,
    ) {
        for r in old_refs.intersection(new_refs) {
            let node = json!({ "$ref": r });
            self.compare_at(&node, &node, dir, at, out, depth + 1);
        }
        let names = |refs: Vec<&&str>| -> Vec<String> {
            refs.into_iter().map(|r| pointer_path(r)).collect()
        };
        let removed = names(old_refs.difference(new_refs).collect());
        let added = names(new_refs.difference(old_refs).collect());
        if removed.is_empty() && added.is_empty() {
            // The same branches in another order: the keyword is a set here.
            return;
        }
        let text = format!(
            "The branches at {at} changed (added: {}; removed: {}); not provably safe.",
            if added.is_empty() {
                "none".to_string()
            } else {
                added.join(", ")
            },
            if removed.is_empty() {
                "none".to_string()
            } else {
                removed.join(", ")
            },
        );
        self.emit(
            out,
            &SCHEMA_COMPOSITION_CHANGED,
            at,
            ChangeKind::CompositionChanged,
            Some(json!(removed)),
            Some(json!(added)),
            text,
        );
    }
}

/// The target of a schema that is exactly `{"$ref": ...}`.
fn bare_ref(v: &Value) -> Option<&str> {
    match v.as_object() {
        Some(m) if m.len() == 1 => m.get("$ref").and_then(Value::as_str),
        _ => None,
    }
}

/// A branch with its `$ref`s followed (bounded) in `defs`.
fn resolve<'v>(mut v: &'v Value, defs: &'v BTreeMap<String, Value>) -> &'v Value {
    for _ in 0..MAX_REF_HOPS {
        match ref_of(v).and_then(|r| defs.get(r)) {
            Some(target) => v = target,
            None => break,
        }
    }
    v
}

const MAX_REF_HOPS: usize = 32;

/// What tells a branch apart from the others, when something does: the values of its
/// required discriminating property (`const` / `enum`), else its type set.
fn signature(branch: &Value) -> Option<String> {
    let m = branch.as_object()?;
    if let Some((name, values)) = discriminator_values(m).into_iter().next() {
        return Some(format!("{name}={}", to_canonical_string(&json!(values))));
    }
    type_set(m).map(|t| format!("type={}", to_canonical_string(&json!(t))))
}

/// Required properties of a branch that admit only listed values (`const` or `enum`), each
/// with its values, by name.
fn discriminator_values(m: &Map<String, Value>) -> BTreeMap<String, BTreeSet<String>> {
    let required: BTreeSet<&str> = m
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    if let Some(Value::Object(props)) = m.get("properties") {
        for (name, p) in props {
            if !required.contains(name.as_str()) {
                continue;
            }
            let values: Option<BTreeSet<String>> = match (p.get("const"), p.get("enum")) {
                (Some(c), _) => Some([to_canonical_string(c)].into()),
                (None, Some(Value::Array(e))) => Some(e.iter().map(to_canonical_string).collect()),
                _ => None,
            };
            if let Some(values) = values {
                out.insert(name.clone(), values);
            }
        }
    }
    out
}

/// Whether no value can match both branches: a required property both constrain to listed
/// values with no value in common, or type sets with no type in common (integer ⊂ number).
fn disjoint(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    let (dx, dy) = (discriminator_values(x), discriminator_values(y));
    if dx
        .iter()
        .any(|(name, vx)| dy.get(name).is_some_and(|vy| vx.is_disjoint(vy)))
    {
        return true;
    }
    match (type_set(x), type_set(y)) {
        (Some(tx), Some(ty)) => {
            let number = |t: &BTreeSet<String>| t.contains("number") || t.contains("integer");
            tx.is_disjoint(&ty) && !(number(&tx) && number(&ty))
        }
        _ => false,
    }
}

/// The targets of a branch list in which every branch is exactly `{"$ref": ...}`, if it is.
fn bare_refs(branches: &[Value]) -> Option<BTreeSet<&str>> {
    branches
        .iter()
        .map(|b| match b.as_object() {
            Some(m) if m.len() == 1 => m.get("$ref").and_then(Value::as_str),
            _ => None,
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Shift {
    Tightened,
    Relaxed,
    Changed,
}

fn constraint_rule(dir: Direction, shift: Shift) -> &'static Rule {
    match shift {
        Shift::Tightened => &CONSTRAINT_TIGHTENED,
        Shift::Relaxed => &CONSTRAINT_RELAXED,
        Shift::Changed => &CONSTRAINT_CHANGED,
    }
    .pick(dir)
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "none".to_string(), to_canonical_string)
}

fn ref_of(v: &Value) -> Option<&str> {
    v.get("$ref").and_then(Value::as_str)
}

fn collect_refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.insert(r.clone());
            }
            map.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(items) => items.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// Like [`collect_refs`], with the direction each `$ref` is used in: everything below a
/// GraphQL `arguments` keyword is sent by the caller.
fn collect_directed_refs(v: &Value, dir: Direction, out: &mut BTreeSet<(String, Direction)>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.insert((r.clone(), dir));
            }
            for (key, value) in map {
                let next = if key == "arguments" {
                    Direction::Request
                } else {
                    dir
                };
                collect_directed_refs(value, next, out);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|x| collect_directed_refs(x, dir, out)),
        _ => {}
    }
}

/// `#/components/schemas/Pet` → `components.schemas.Pet`.
pub fn pointer_path(reference: &str) -> String {
    reference
        .trim_start_matches('#')
        .trim_start_matches('/')
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// The set of JSON types a schema allows; `None` means any.
fn type_set(schema: &Map<String, Value>) -> Option<BTreeSet<String>> {
    match schema.get("type") {
        Some(Value::String(t)) => Some([t.clone()].into()),
        Some(Value::Array(ts)) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        ),
        _ => None,
    }
}

/// Whether every value of type set `inner` is allowed by `outer` (integer ⊂ number).
fn covers(outer: &Option<BTreeSet<String>>, inner: &Option<BTreeSet<String>>) -> bool {
    match (outer, inner) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(o), Some(i)) => i
            .iter()
            .all(|t| o.contains(t) || (t == "integer" && o.contains("number"))),
    }
}

fn string_set(v: Option<&Value>) -> BTreeSet<&str> {
    v.and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `enum` (or `const` as a one-value enum) as canonical text → value.
fn enum_values(schema: &Map<String, Value>) -> Option<BTreeMap<String, Value>> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        return Some(
            values
                .iter()
                .map(|v| (to_canonical_string(v), v.clone()))
                .collect(),
        );
    }
    schema
        .get("const")
        .map(|v| [(to_canonical_string(v), v.clone())].into())
}

/// `anyOf: [T, {"type": "null"}]` (either order, no `oneOf`/`allOf` beside it), or
/// `oneOf: [T, {"type": "null"}]` when T provably excludes null (so exactly one branch holds
/// for every value, as with `anyOf`; `defs` resolves T's `$ref`): T and the keywords beside
/// the wrapper (title, default, description) as one schema. `None` when `schema` is not of
/// that shape, or when T and its siblings cannot be merged (a key on both, a `$ref` with
/// siblings).
fn null_wrapped(schema: &Value, defs: &BTreeMap<String, Value>) -> Option<Value> {
    let map = schema.as_object()?;
    let (keyword, branches) = match (map.get("anyOf"), map.get("oneOf")) {
        (Some(Value::Array(b)), None) => ("anyOf", b),
        (None, Some(Value::Array(b))) => ("oneOf", b),
        _ => return None,
    };
    let null = json!({"type": "null"});
    let core = match branches.as_slice() {
        [t, x] | [x, t] if *x == null && *t != null => t.as_object()?,
        _ => return None,
    };
    if keyword == "oneOf" {
        let target = resolve(&Value::Object(core.clone()), defs).clone();
        let excludes_null = target
            .as_object()
            .and_then(type_set)
            .is_some_and(|types| !types.contains("null"));
        if !excludes_null {
            return None;
        }
    }
    let siblings: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| k.as_str() != keyword)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if siblings.is_empty() {
        return Some(Value::Object(core.clone()));
    }
    if core.contains_key("$ref")
        || ["oneOf", "allOf", "type"]
            .iter()
            .any(|k| siblings.contains_key(*k))
        || siblings.keys().any(|k| core.contains_key(k))
    {
        return None;
    }
    let mut merged = core.clone();
    merged.extend(siblings);
    Some(Value::Object(merged))
}

/// A schema as (its values other than null, whether it allows null): the T of
/// `anyOf: [T, null]`, or the schema with `"null"` taken out of its `type`.
fn split_null(schema: &Value, defs: &BTreeMap<String, Value>) -> (Value, bool) {
    if let Some(core) = null_wrapped(schema, defs) {
        let (core, _) = split_null(&core, defs);
        return (core, true);
    }
    let Some(Value::Array(types)) = schema.get("type") else {
        return (schema.clone(), false);
    };
    let kept: Vec<&Value> = types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .collect();
    if kept.len() == types.len() || kept.is_empty() {
        return (schema.clone(), false);
    }
    let mut core = schema.clone();
    core["type"] = match kept.as_slice() {
        [one] => (*one).clone(),
        _ => Value::Array(kept.into_iter().cloned().collect()),
    };
    (core, true)
}

/// Whether every value of numeric format `narrow` is a value of format `wide`: the integer
/// widths (`int8` ⊂ `int16` ⊂ `int32` ⊂ `int64`, `uint8` ⊂ `int16`; OData's `Edm.SByte`,
/// `Edm.Byte`, `Edm.Int16`, `Edm.Int32`, `Edm.Int64`) and the float widths (`float` ⊂
/// `double`; OData's `Edm.Single`, `Edm.Double`).
fn width_within(narrow: &str, wide: &str) -> bool {
    let width = |f: &str| match f {
        "int8" => Some(("int", 8)),
        "uint8" => Some(("uint", 8)),
        "int16" => Some(("int", 16)),
        "int32" => Some(("int", 32)),
        "int64" => Some(("int", 64)),
        "float" => Some(("float", 32)),
        "double" => Some(("float", 64)),
        _ => None,
    };
    match (width(narrow), width(wide)) {
        (Some((nf, nb)), Some((wf, wb))) => nb < wb && (nf == wf || (nf == "uint" && wf == "int")),
        _ => false,
    }
}

/// One end of a numeric interval: the bound and whether it is exclusive.
type End = (f64, bool);

/// The effective end of `schema`'s interval on one side (`upper`: the maximum), from its
/// inclusive and exclusive keywords (the tighter when both are stated). For integers an
/// exclusive `n` is the inclusive `n - 1` (`n + 1` below) and a fractional bound is rounded
/// inward, so `maximum: 9` and `exclusiveMaximum: 10` are the same set. `None`: unbounded;
/// `Some(Err)`: a bound that is not a number.
fn numeric_end(
    schema: &Map<String, Value>,
    inclusive: &str,
    exclusive: &str,
    upper: bool,
    integer: bool,
) -> Option<Result<End, ()>> {
    let read = |k: &str, excl: bool| {
        schema.get(k).map(|v| {
            as_f64(v)
                .map(|x| normal_end((x, excl), upper, integer))
                .ok_or(())
        })
    };
    match (read(inclusive, false), read(exclusive, true)) {
        (None, None) => None,
        (Some(Err(())), _) | (_, Some(Err(()))) => Some(Err(())),
        (Some(Ok(a)), None) | (None, Some(Ok(a))) => Some(Ok(a)),
        (Some(Ok(a)), Some(Ok(b))) => Some(Ok(if end_looser(a, b, upper) { a } else { b })),
    }
}

/// An end in its one spelling: integers have no exclusive ends.
fn normal_end((x, exclusive): End, upper: bool, integer: bool) -> End {
    if !integer {
        return (x, exclusive);
    }
    let step = if upper { -1.0 } else { 1.0 };
    let rounded = if upper { x.floor() } else { x.ceil() };
    if exclusive && rounded == x {
        (x + step, false)
    } else {
        (rounded, false)
    }
}

/// Whether end `b` admits more values than end `a` (a larger maximum, a smaller minimum; at the
/// same number, inclusive over exclusive).
fn end_looser(a: End, b: End, upper: bool) -> bool {
    if a.0 == b.0 {
        a.1 && !b.1
    } else {
        (b.0 > a.0) == upper
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    v.as_number()
        .and_then(|n| n.to_string().parse::<f64>().ok())
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &DEFINITION_RENAMED,
    &SCHEMA_RESPELLED,
    &READ_WRITE_ONLY_CHANGED,
    &READ_WRITE_ONLY_SIDE_IGNORED,
    &REQUEST_BRANCH_ADDED,
    &REQUEST_BRANCH_REMOVED,
    &REQUEST_CONSTRAINT_CHANGED,
    &REQUEST_CONSTRAINT_RELAXED,
    &REQUEST_CONSTRAINT_TIGHTENED,
    &REQUEST_DEFAULT_CHANGED,
    &REQUIRED_VALUE_DEFAULT_CHANGED,
    &REQUEST_ENUM_VALUE_ADDED,
    &REQUEST_ENUM_VALUE_REMOVED,
    &REQUEST_PROPERTY_ADDED_OPTIONAL,
    &REQUEST_PROPERTY_ADDED_REQUIRED,
    &REQUEST_PROPERTY_BECAME_OPTIONAL,
    &REQUEST_PROPERTY_BECAME_REQUIRED,
    &REQUEST_PROPERTY_REMOVED,
    &REQUEST_TYPE_CHANGED,
    &REQUEST_TYPE_WIDENED,
    &RESPONSE_BRANCH_ADDED,
    &RESPONSE_BRANCH_REMOVED,
    &RESPONSE_CONSTRAINT_CHANGED,
    &RESPONSE_CONSTRAINT_RELAXED,
    &RESPONSE_CONSTRAINT_TIGHTENED,
    &RESPONSE_DEFAULT_CHANGED,
    &RESPONSE_ENUM_VALUE_ADDED,
    &RESPONSE_ENUM_VALUE_REMOVED,
    &RESPONSE_PROPERTY_ADDED,
    &RESPONSE_PROPERTY_BECAME_OPTIONAL,
    &RESPONSE_PROPERTY_BECAME_REQUIRED,
    &RESPONSE_PROPERTY_REMOVED,
    &RESPONSE_TYPE_CHANGED,
    &RESPONSE_TYPE_NARROWED,
    &SCHEMA_COMPOSITION_CHANGED,
    &SCHEMA_KEYWORD_CHANGED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{
        at, check_case, doc, openapi, openapi_reversed, Case, Edit, Pair, LIST, NEW_PET, PET,
    };
    use crate::core::normalize::openapi::normalize_value;
    use serde_json::json;

    /// Both documents edited: `old` makes the old one, `new` the new one.
    fn both(old: Edit, new: Edit) -> Pair {
        let normalize = |d| normalize_value("acme.pets", &d).expect("normalizes");
        (normalize(doc(old)), normalize(doc(new)))
    }

    /// `tag` of `schema` as an anyOf of a string, or of a string and an integer.
    fn one_branch(schema: &str) -> Edit {
        match schema {
            PET => |d| at(d, PET)["properties"]["tag"] = json!({"anyOf": [{"type": "string"}]}),
            _ => |d| at(d, NEW_PET)["properties"]["tag"] = json!({"anyOf": [{"type": "string"}]}),
        }
    }

    fn two_branches(schema: &str) -> Edit {
        match schema {
            PET => |d| {
                at(d, PET)["properties"]["tag"] =
                    json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
            },
            _ => |d| {
                at(d, NEW_PET)["properties"]["tag"] =
                    json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
            },
        }
    }

    /// One case per rule of this family (more where kinds differ).
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            // Pet renamed Animal, same schema.
            Case::new(
                &DEFINITION_RENAMED,
                openapi(|d| {
                    let pet = at(d, "/components/schemas")
                        .as_object_mut()
                        .unwrap()
                        .remove("Pet");
                    at(d, "/components/schemas")["Animal"] = pet.unwrap();
                    at(d, LIST)["responses"]["200"]["content"]["application/json"]["schema"]
                        ["items"] = json!({"$ref": "#/components/schemas/Animal"});
                }),
            ),
            // NewPet inlined in createPet's request body.
            Case::new(
                &DEFINITION_RENAMED,
                openapi(|d| {
                    let new_pet = at(d, NEW_PET).clone();
                    at(
                        d,
                        "/paths/~1pets/post/requestBody/content/application~1json",
                    )["schema"] = new_pet;
                }),
            ),
            Case::new(
                &REQUEST_BRANCH_ADDED,
                both(one_branch(NEW_PET), two_branches(NEW_PET)),
            ),
            Case::new(
                &REQUEST_BRANCH_REMOVED,
                both(two_branches(NEW_PET), one_branch(NEW_PET)),
            ),
            Case::new(
                &RESPONSE_BRANCH_ADDED,
                both(one_branch(PET), two_branches(PET)),
            ),
            Case::new(
                &RESPONSE_BRANCH_REMOVED,
                both(two_branches(PET), one_branch(PET)),
            ),
            // oneOf of disjoint types reads as anyOf.
            Case::new(
                &RESPONSE_BRANCH_REMOVED,
                both(
                    |d| {
                        at(d, PET)["properties"]["tag"] =
                            json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})
                    },
                    |d| at(d, PET)["properties"]["tag"] = json!({"oneOf": [{"type": "string"}]}),
                ),
            ),
            Case::new(
                &DOCUMENTATION_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["tag"]["description"] = json!("A tag.");
                }),
            ),
            Case::new(
                &READ_WRITE_ONLY_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["id"]["readOnly"] = json!(true);
                }),
            ),
            // A server-assigned id callers never send, even though it is required.
            Case::new(
                &READ_WRITE_ONLY_SIDE_IGNORED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["id"] =
                        json!({"type": "integer", "readOnly": true});
                    at(d, NEW_PET)["required"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!("id"));
                }),
            ),
            // A password callers send but never receive.
            Case::new(
                &READ_WRITE_ONLY_SIDE_IGNORED,
                openapi_reversed(|d| {
                    at(d, PET)["properties"]["password"] =
                        json!({"type": "string", "writeOnly": true});
                    at(d, PET)["required"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!("password"));
                }),
            ),
            Case::new(
                &REQUEST_CONSTRAINT_CHANGED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["name"]["pattern"] = json!("^[A-Z]+$");
                }),
            ),
            Case::new(
                &REQUEST_CONSTRAINT_RELAXED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["name"]["maxLength"] = json!(100);
                }),
            ),
            Case::new(
                &REQUEST_CONSTRAINT_TIGHTENED,
                openapi(|d| {
                    at(d, LIST)["parameters"][0]["schema"]["maximum"] = json!(50);
                }),
            ),
            Case::new(
                &REQUEST_DEFAULT_CHANGED,
                openapi(|d| {
                    at(d, LIST)["parameters"][0]["schema"]["default"] = json!(20);
                }),
            ),
            Case::new(
                &REQUEST_ENUM_VALUE_ADDED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["kind"]["enum"] = json!(["cat", "dog", "fish"]);
                }),
            ),
            Case::new(
                &REQUEST_ENUM_VALUE_REMOVED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["kind"]["enum"] = json!(["cat"]);
                }),
            ),
            Case::new(
                &REQUEST_PROPERTY_ADDED_OPTIONAL,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["color"] = json!({"type": "string"});
                }),
            ),
            Case::new(
                &REQUEST_PROPERTY_ADDED_REQUIRED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["color"] = json!({"type": "string"});
                    at(d, NEW_PET)["required"] = json!(["name", "color"]);
                }),
            ),
            Case::new(
                &REQUEST_PROPERTY_BECAME_OPTIONAL,
                openapi(|d| {
                    at(d, NEW_PET)["required"] = json!([]);
                }),
            ),
            Case::new(
                &REQUEST_PROPERTY_BECAME_REQUIRED,
                openapi(|d| {
                    at(d, NEW_PET)["required"] = json!(["name", "age"]);
                }),
            ),
            Case::new(
                &REQUEST_PROPERTY_REMOVED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]
                        .as_object_mut()
                        .unwrap()
                        .remove("tag");
                }),
            ),
            Case::new(
                &REQUEST_TYPE_CHANGED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["age"]["type"] = json!("string");
                }),
            ),
            Case::new(
                &REQUEST_TYPE_WIDENED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["age"]["type"] = json!("number");
                }),
            ),
            Case::new(
                &RESPONSE_CONSTRAINT_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["id"]["format"] = json!("unix-time");
                }),
            ),
            Case::new(
                &REQUIRED_VALUE_DEFAULT_CHANGED,
                openapi(|d| {
                    at(d, NEW_PET)["properties"]["name"]["default"] = json!("rex");
                }),
            ),
            Case::new(
                &SCHEMA_RESPELLED,
                both(
                    |d| at(d, NEW_PET)["properties"]["age"]["maximum"] = json!(9),
                    |d| at(d, NEW_PET)["properties"]["age"]["exclusiveMaximum"] = json!(10),
                ),
            ),
            Case::new(
                &SCHEMA_RESPELLED,
                both(
                    |d| at(d, NEW_PET)["properties"]["tag"]["type"] = json!(["null", "string"]),
                    |d| {
                        at(d, NEW_PET)["properties"]["tag"] =
                            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
                    },
                ),
            ),
            Case::new(
                &RESPONSE_CONSTRAINT_RELAXED,
                openapi(|d| {
                    at(d, PET)["properties"]["name"]["maxLength"] = json!(500);
                }),
            ),
            Case::new(
                &RESPONSE_CONSTRAINT_TIGHTENED,
                openapi(|d| {
                    at(d, PET)["properties"]["name"]["maxLength"] = json!(20);
                }),
            ),
            Case::new(
                &RESPONSE_DEFAULT_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["tag"]["default"] = json!("none");
                }),
            ),
            Case::new(
                &RESPONSE_ENUM_VALUE_ADDED,
                openapi(|d| {
                    at(d, PET)["properties"]["status"]["enum"] =
                        json!(["available", "pending", "sold"]);
                }),
            ),
            Case::new(
                &RESPONSE_ENUM_VALUE_REMOVED,
                openapi(|d| {
                    at(d, PET)["properties"]["status"]["enum"] = json!(["available"]);
                }),
            ),
            Case::new(
                &RESPONSE_PROPERTY_ADDED,
                openapi(|d| {
                    at(d, PET)["properties"]["color"] = json!({"type": "string"});
                }),
            ),
            Case::new(
                &RESPONSE_PROPERTY_BECAME_OPTIONAL,
                openapi(|d| {
                    at(d, PET)["required"] = json!(["id"]);
                }),
            ),
            Case::new(
                &RESPONSE_PROPERTY_BECAME_REQUIRED,
                openapi(|d| {
                    at(d, PET)["required"] = json!(["id", "name", "tag"]);
                }),
            ),
            Case::new(
                &RESPONSE_PROPERTY_REMOVED,
                openapi(|d| {
                    at(d, PET)["properties"]
                        .as_object_mut()
                        .unwrap()
                        .remove("tag");
                }),
            ),
            Case::new(
                &RESPONSE_TYPE_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["id"]["type"] = json!("number");
                }),
            ),
            Case::new(
                &RESPONSE_TYPE_NARROWED,
                openapi_reversed(|d| {
                    at(d, PET)["properties"]["tag"]["nullable"] = json!(true);
                }),
            ),
            Case::new(
                &SCHEMA_COMPOSITION_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["tag"] =
                        json!({"oneOf": [{"type": "string"}, {"type": "integer"}]});
                }),
            ),
            Case::new(
                &SCHEMA_KEYWORD_CHANGED,
                openapi(|d| {
                    at(d, PET)["properties"]["tag"]["contentEncoding"] = json!("base64");
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

    fn rules_of(old: Edit, new: Edit) -> Vec<String> {
        let (o, n) = both(old, new);
        let report = crate::core::diff::classify(&o, &n, &Default::default());
        report.changes.into_iter().map(|c| c.rule).collect()
    }

    /// oneOf branches that may overlap stay `schema-composition-changed`; branches told apart
    /// by a required discriminator's values are paired by it, so a branch added next to a
    /// changed one is one addition plus the change inside its counterpart.
    #[test]
    fn one_of_reads_as_any_of_only_when_its_branches_are_provably_disjoint() {
        let overlapping = rules_of(
            |d| {
                at(d, PET)["properties"]["tag"] = json!({"oneOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}}]})
            },
            |d| {
                at(d, PET)["properties"]["tag"] = json!({"oneOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"type": "object", "properties": {"b": {"type": "string"}}}]})
            },
        );
        assert_eq!(overlapping, vec![SCHEMA_COMPOSITION_CHANGED.id]);
        let tagged = rules_of(
            |d| {
                at(d, PET)["properties"]["tag"] = json!({"oneOf": [
                    {"type": "object", "required": ["kind"], "properties": {
                        "kind": {"const": "cat"}, "lives": {"type": "integer", "maximum": 9}}}]})
            },
            |d| {
                at(d, PET)["properties"]["tag"] = json!({"oneOf": [
                    {"type": "object", "required": ["kind"], "properties": {
                        "kind": {"const": "dog"}}},
                    {"type": "object", "required": ["kind"], "properties": {
                        "kind": {"const": "cat"}, "lives": {"type": "integer", "maximum": 7}}}]})
            },
        );
        assert_eq!(
            tagged,
            vec![RESPONSE_BRANCH_ADDED.id, RESPONSE_CONSTRAINT_TIGHTENED.id]
        );
    }

    /// The keywords the catch-all loop skips are exactly the ones a comparison judges.
    #[test]
    fn modelled_keywords_are_the_compared_ones() {
        let mut compared: Vec<&str> = vec![
            "$ref",
            "type",
            "properties",
            "required",
            "enum",
            "const",
            "pattern",
            "format",
            "uniqueItems",
            "additionalProperties",
            "items",
            "allOf",
            "anyOf",
            "oneOf",
            "prefixItems",
            "default",
            "readOnly",
            "writeOnly",
            "arguments",
            "nonNull",
            EXTENSIBLE_ENUM,
            crate::core::normalize::graphql::DIRECTIVES_KEYWORD,
            crate::core::normalize::graphql::VALUE_DIRECTIVES_KEYWORD,
            crate::core::normalize::graphql::ONE_OF_KEYWORD,
            crate::core::normalize::graphql::SPECIFIED_BY_KEYWORD,
            crate::core::normalize::graphql::SCALAR_DIRECTIVES_KEYWORD,
            crate::core::normalize::odata::ANNOTATIONS_KEYWORD,
            crate::core::normalize::odata::FACETS_KEYWORD,
            crate::core::normalize::odata::NULLABLE_KEYWORD,
            crate::core::normalize::odata::CONTAINS_TARGET_KEYWORD,
            crate::core::normalize::odata::IMMUTABLE_KEYWORD,
            crate::core::normalize::odata::MEMBER_VALUES_KEYWORD,
        ];
        compared.extend(UPPER_BOUNDS);
        compared.extend(LOWER_BOUNDS);
        compared.extend(PRESENCE_CONSTRAINTS);
        let compared: std::collections::BTreeSet<&str> = compared.into_iter().collect();
        let modelled = &crate::core::diff::SCHEMA_WIRING.modelled;
        let derived: std::collections::BTreeSet<&str> = modelled.iter().copied().collect();
        assert_eq!(derived, compared);
        for keyword in DOC_KEYWORDS.iter().chain(DEPRECATED_CHANGED.keywords) {
            assert!(!modelled.contains(keyword), "{keyword}");
            assert!(documentation_rule(keyword).is_some(), "{keyword}");
        }
    }
}
