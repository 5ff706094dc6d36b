//! Drift classification: match old and new endpoints once ([`pair`]), then let the rule
//! families judge matched pairs and unmatched sides. This file is the walk that wires the
//! families together; each family is a leaf beside its checks and cases ([`contract`],
//! [`endpoint`], [`parameter`], [`body`], [`response`], [`schema`] (recursive,
//! direction-aware), [`tool`] (MCP's stricter text rules), [`text`], [`database`], and the
//! kinds' own [`graphql`], [`odata`], [`openrpc`]), built on the base modules [`rule`] (the rule
//! type), [`emit`] (the emitter) and [`shared`] (the rules several families emit). What a kind
//! adds (rule swaps, hooks, schema keywords) reaches the families as data: [`KindHooks`] (each
//! kind's, in its declaration in `core::kinds`) and `SchemaWiring` from here. [`rules`] is the
//! registry of the families. The report's compatibility is its most severe change; a
//! fingerprint difference no rule explains is an `unclassified-change` (breaking), never
//! silently identical.

pub mod body;

pub mod contract;
pub mod database;
pub mod emit;
pub mod endpoint;
pub mod graphql;
pub mod odata;
pub mod openrpc;
pub mod pair;
pub mod parameter;
pub mod response;
pub mod rule;
pub mod rules;
pub mod schema;
pub mod shared;
pub mod stability;
#[cfg(test)]
mod tests;
pub mod text;
pub mod tool;
#[cfg(test)]
mod value_sets;

pub use contract::SurfaceClassification;
pub use emit::Emitter;

use crate::core::change_kind::ChangeKind;
use crate::core::fingerprint::SpecIndex;
use crate::core::model::{
    Compatibility, DriftReport, EndpointSpec, EndpointSubKind, Kind, ToolSpec,
};
use crate::core::scope::{Scope, Uses};
use crate::core::sunset::{Date, EndpointFacts, SunsetPolicy};
use emit::RuleSwap;
use pair::{match_endpoints, EndpointPair};
use rule::SeverityOverrides;
use schema::{Direction, SchemaDiffer, SchemaWiring};
use serde_json::json;
use shared::{endpoint_path, DOCUMENTATION_CHANGED, EXTENSION_CHANGED, UNCLASSIFIED_CHANGE};
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// How a watch (or `diff`) classifies drift: severity overrides and, when the watch has one,
/// its surface classification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassifyPolicy {
    /// `[severity]` and `[watch.severity]` overrides, keyed by rule id (or alias).
    pub severity: SeverityOverrides,
    /// A new endpoint this does not classify is an `endpoint-unclassified` change.
    pub classification: Option<SurfaceClassification>,
    /// The consumer's scope (`uses`): a change outside it is demoted to `info` and marked
    /// `out_of_scope` (`core::scope`). `None`: everything is in scope.
    pub uses: Option<Uses>,
    /// The stability and sunset policy (`[policy]`, `[watch.policy]`), read from the accepted
    /// (old) side only.
    pub sunset: SunsetPolicy,
    /// The check date the policy judges sunsets on (`diff --date`, today in the daemon);
    /// `None`: no sunset has passed.
    pub date: Option<Date>,
}

/// A check of a matched pair of endpoints at `at` (their path in the report).
pub type PairHook = fn(&EndpointSpec, &EndpointSpec, &str, &mut Emitter);

/// What a kind adds to the general rules, as data the walk hands the families (so no family
/// imports another). Each kind's are a field of its declaration (`core::kinds`).
#[derive(Clone, Copy, Default)]
pub struct KindHooks {
    /// Swaps general rules for the kind's own (MCP: model-facing text, prompts, resources).
    pub swap: Option<RuleSwap>,
    /// Judges a new endpoint in place of the endpoint family (databases).
    pub added: Option<fn(&EndpointSpec, &mut Emitter)>,
    /// Judges a matched pair's differing `meta` in place of the endpoint family (databases,
    /// OData, OpenRPC).
    pub meta: Option<PairHook>,
    /// A further check of every matched pair (OpenRPC's `paramStructure`).
    pub pair: Option<PairHook>,
}

impl KindHooks {
    /// Nothing added to the general rules.
    pub const NONE: KindHooks = KindHooks {
        swap: None,
        added: None,
        meta: None,
        pair: None,
    };
}

/// The hooks of each kind: its declaration's `hooks` (`core::kinds`).
pub fn kind_hooks(kind: Kind) -> KindHooks {
    kind.decl().hooks
}

/// What the schema walker needs from the rest of `core/diff`: the keywords a rule judges
/// (from the registry) and the kinds' schema keyword checks (GraphQL, OData).
pub static SCHEMA_WIRING: LazyLock<SchemaWiring> = LazyLock::new(|| SchemaWiring {
    modelled: rules::modelled_keywords(),
    named_type_hook: Some(graphql::compare_named_types),
    keyword_hooks: vec![
        graphql::compare_schema_keywords,
        odata::compare_schema_keywords,
    ],
});

/// Compares two contracts of the same watch.
pub fn classify(old: &ToolSpec, new: &ToolSpec, policy: &ClassifyPolicy) -> DriftReport {
    let (old_index, new_index) = (SpecIndex::new(old), SpecIndex::new(new));
    // The comparison needs every endpoint's fingerprint: computed once here, then the tool
    // fingerprints read them from the cache instead of hashing every endpoint a second time.
    old_index.endpoint_fingerprints_by_position();
    new_index.endpoint_fingerprints_by_position();
    let old_fingerprint = old_index.tool_fingerprint();
    let new_fingerprint = new_index.tool_fingerprint();
    if old_fingerprint == new_fingerprint {
        return DriftReport {
            compatibility: Compatibility::Identical,
            old_fingerprint,
            new_fingerprint,
            changes: Vec::new(),
        };
    }
    let hooks = kind_hooks(new.kind);
    let scope = policy
        .uses
        .as_ref()
        .map(|uses| Scope::resolve(uses, old, new));
    let mut out = Emitter::new(&policy.severity)
        .for_kind(new.kind, hooks.swap)
        .with_scope(scope.as_ref())
        .with_policy(&policy.sunset, policy.date);
    let mut schemas = SchemaDiffer::new(&old.definitions, &new.definitions, &SCHEMA_WIRING)
        .nominal_types(old.kind == Kind::Graphql && new.kind == Kind::Graphql);

    contract::compare(old, new, &mut out);

    compare_extensions(old, new, &mut out);
    graphql::compare_directives(old, new, &mut out);
    graphql::compare_roots(old, new, &mut out);
    tool::compare_capabilities(
        old.capabilities.as_ref(),
        new.capabilities.as_ref(),
        &mut out,
    );
    // Endpoints whose fingerprints are equal are left out of the pairs: nothing they hold or
    // reach changed, so no rule can fire (the projection covers every field and reached
    // definition). Every matched pair below differs.
    let (old_fps, new_fps) = (
        old_index.endpoint_fingerprints_by_position(),
        new_index.endpoint_fingerprints_by_position(),
    );
    let pairs = match_endpoints(&old.endpoints, &new.endpoints, &|o, n| {
        old_fps[o] == new_fps[n]
    });
    endpoint::note_possible_renames(&pairs, &mut out);
    let mut unexplained: Vec<(&EndpointSpec, &EndpointSpec)> = Vec::new();
    for pair in &pairs {
        out.set_endpoint(Some(match pair {
            EndpointPair::Removed(e) | EndpointPair::Added(e) | EndpointPair::Matched(_, e) => {
                e.sub_kind()
            }
        }));
        out.set_endpoint_used(match pair {
            EndpointPair::Removed(e) | EndpointPair::Added(e) => out.uses_any(&[e.name.as_str()]),
            EndpointPair::Matched(o, n) => out.uses_any(&[o.name.as_str(), n.name.as_str()]),
        });
        // The policy reads the accepted side only: a provider cannot lower protection by
        // editing the document it publishes.
        let accepted = match pair {
            EndpointPair::Removed(o) | EndpointPair::Matched(o, _) => {
                Some(EndpointFacts::of(o, &old.definitions))
            }
            EndpointPair::Added(_) => None,
        };
        out.set_accepted(accepted.clone());
        match pair {
            EndpointPair::Removed(o) => endpoint::removed(o, &mut out),
            EndpointPair::Added(n) => match hooks.added {
                Some(added) => added(n, &mut out),
                None => endpoint::added(n, new.kind, &mut out),
            },
            EndpointPair::Matched(o, n) => {
                let before = out.changes.len();
                let defs_before = schemas.changed_definitions.len();
                compare_pair(o, n, &hooks, &mut schemas, &mut out);
                // The accepted side's facts were read once, above.
                let old_facts = accepted.unwrap_or_else(|| EndpointFacts::of(o, &old.definitions));
                let new_facts = EndpointFacts::of(n, &new.definitions);
                stability::compare(o, n, (&old_facts, &new_facts), &endpoint_path(n), &mut out);
                let explained =
                    out.changes.len() > before || schemas.changed_definitions.len() > defs_before;
                if !explained {
                    unexplained.push((o, n));
                }
            }
        }
    }
    out.set_endpoint(None);
    out.set_endpoint_used(None);
    out.set_accepted(None);
    // An endpoint whose only difference lies in a shared definition is explained when that
    // definition's change was reported (possibly while comparing another endpoint).
    for (o, n) in unexplained {
        let changed = &schemas.changed_definitions;
        if !old_index.reaches_any(o, changed) && !new_index.reaches_any(n, changed) {
            let used = out.uses_any(&[o.name.as_str(), n.name.as_str()]);
            out.set_endpoint_used(used);
            out.emit(
                &UNCLASSIFIED_CHANGE,
                &endpoint_path(n),
                ChangeKind::UnclassifiedChange,
                None,
                None,
                "The endpoint's contract changed in a way no rule explains.".into(),
            );
            out.set_endpoint_used(None);
        }
    }
    text::scan(old, new, &pairs, &mut out);
    let mut changes = std::mem::take(&mut out.changes);
    if changes.is_empty() {
        out.emit(
            &UNCLASSIFIED_CHANGE,
            "",
            ChangeKind::UnclassifiedChange,
            Some(json!(old_fingerprint)),
            Some(json!(new_fingerprint)),
            "The contract's fingerprint changed and no rule explains it.".into(),
        );
        changes = std::mem::take(&mut out.changes);
    }
    // Judged after the check above, as refresh did before the classifier decided it.
    if let Some(surface) = &policy.classification {
        contract::flag_unclassified(old, new, surface, &mut out);
        changes.append(&mut out.changes);
    }
    changes.sort();
    changes.dedup();
    let compatibility = changes
        .iter()
        .map(|c| Compatibility::from_severity(c.severity))
        .max()
        .unwrap_or(Compatibility::Breaking);
    DriftReport {
        compatibility,
        old_fingerprint,
        new_fingerprint,
        changes,
    }
}

/// One matched pair of endpoints that differ: the endpoint family, the kind's hooks, then
/// parameters, body, responses and the tool schemas in their directions.
fn compare_pair(
    o: &EndpointSpec,
    n: &EndpointSpec,
    hooks: &KindHooks,
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let at = &endpoint_path(n);
    endpoint::compare_endpoint(o, n, at, out);
    if let Some(pair) = hooks.pair {
        pair(o, n, at, out);
    }
    match hooks.meta {
        Some(meta) if o.meta != n.meta => meta(o, n, at, out),
        Some(_) => {}
        None => endpoint::compare_meta(o, n, at, out),
    }
    // Webhooks and callbacks run the other way: the provider sends, the consumer answers.
    let (send, receive) = if is_reversed(n) {
        (Direction::Response, Direction::Request)
    } else {
        (Direction::Request, Direction::Response)
    };
    parameter::compare_parameters(
        send,
        at,
        (&o.parameters, &o.path_template),
        (&n.parameters, &n.path_template),
        schemas,
        out,
    );
    body::compare_request_body(
        send,
        at,
        o.request_body.as_deref(),
        n.request_body.as_deref(),
        schemas,
        out,
    );
    response::compare_responses(receive, at, &o.responses, &n.responses, schemas, out);
    for (label, old_schema, new_schema, direction) in [
        (
            "input_schema",
            &o.input_schema,
            &n.input_schema,
            Direction::Request,
        ),
        (
            "output_schema",
            &o.output_schema,
            &n.output_schema,
            Direction::Response,
        ),
    ] {
        let empty = json!({});
        schemas.compare(
            old_schema.as_deref().unwrap_or(&empty),
            new_schema.as_deref().unwrap_or(&empty),
            direction,
            &format!("{at}.{label}"),
            out,
        );
    }
}

/// Webhook and callback endpoints are called by the provider, so their directions flip.
fn is_reversed(e: &EndpointSpec) -> bool {
    matches!(
        e.sub_kind(),
        EndpointSubKind::Webhook | EndpointSubKind::Callback
    )
}

/// Contract-level fields kept verbatim (deny by default): an `x-` key is a vendor extension
/// (`extension-changed`), any other an `unclassified-change` at its exact path.
fn compare_extensions(old: &ToolSpec, new: &ToolSpec, out: &mut Emitter) {
    if old.extensions == new.extensions {
        return;
    }
    let keys: BTreeSet<&String> = old.extensions.keys().chain(new.extensions.keys()).collect();
    for key in keys {
        let (before, after) = (old.extensions.get(key), new.extensions.get(key));
        if before == after {
            continue;
        }
        let (rule, kind) = if key.starts_with("x-") {
            (&EXTENSION_CHANGED, ChangeKind::ExtensionChanged)
        } else if key.starts_with("annotations.") {
            (odata::annotation_rule(key), ChangeKind::AnnotationChanged)
        } else if key.ends_with(".description") {
            (&DOCUMENTATION_CHANGED, ChangeKind::DocumentationChanged)
        } else {
            (&UNCLASSIFIED_CHANGE, ChangeKind::UnclassifiedChange)
        };
        out.emit(
            rule,
            &format!("extensions.{key}"),
            kind,
            before.cloned(),
            after.cloned(),
            format!("The contract field {key}, kept but not modelled, changed."),
        );
    }
}
