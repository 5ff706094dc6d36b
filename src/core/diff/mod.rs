//! Drift classification: match old and new endpoints once, then let the rules judge matched
//! pairs and unmatched sides. Schemas are compared recursively and direction-aware (see
//! [`schema`]). The report's compatibility is its most severe change; a fingerprint difference
//! no rule explains is an `unclassified-change` (breaking), never silently identical.

pub mod rules;
pub mod schema;
#[cfg(test)]
mod tests;

use crate::core::fingerprint::SpecIndex;
use crate::core::model::{
    Change, Compatibility, DriftReport, EndpointSpec, Kind, ParameterSpec, RequestBody,
    ResponseSpec, Severity, ToolSpec, ValueOrd,
};
use rules::SeverityOverrides;
use schema::{Direction, SchemaDiffer};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Collects changes, applying the rule's severity (or its override).
pub struct Emitter<'o> {
    overrides: &'o SeverityOverrides,
    pub changes: Vec<Change>,
    /// The kind whose rules apply (MCP swaps in stricter rules for model-facing text).
    kind: Option<Kind>,
}

impl<'o> Emitter<'o> {
    pub fn new(overrides: &'o SeverityOverrides) -> Self {
        Emitter {
            overrides,
            changes: Vec::new(),
            kind: None,
        }
    }

    /// Judges changes with the rules of `kind` where they differ from the general ones.
    pub fn for_kind(mut self, kind: Kind) -> Self {
        self.kind = Some(kind);
        self
    }

    pub fn emit(
        &mut self,
        rule_id: &'static str,
        path: &str,
        kind: &str,
        before: Option<Value>,
        after: Option<Value>,
        message: String,
    ) {
        let rule_id = match self.kind {
            Some(kind) => kind_rule(kind, rule_id),
            None => rule_id,
        };
        let severity = self
            .overrides
            .get(rule_id)
            .copied()
            .or_else(|| rules::find(rule_id).map(|r| r.severity))
            // A rule id missing from the registry is a programming error; judge it conservatively.
            .unwrap_or(Severity::Breaking);
        self.changes.push(Change {
            path: path.to_string(),
            kind: kind.to_string(),
            rule: rule_id.to_string(),
            severity,
            before: before.map(ValueOrd),
            after: after.map(ValueOrd),
            message,
        });
    }
}

/// The rule a kind uses in place of a general one. For MCP every piece of text reaches a
/// model (tool poisoning), so text changes and new tools are security (docs/design.md).
fn kind_rule(kind: Kind, rule_id: &'static str) -> &'static str {
    match (kind, rule_id) {
        (Kind::Mcp, "description-changed") => "tool-description-changed",
        (Kind::Mcp, "title-changed") => "tool-title-changed",
        (Kind::Mcp, "documentation-changed") => "tool-schema-text-changed",
        (Kind::Mcp, "endpoint-added-read-only" | "endpoint-added-write") => "tool-added",
        _ => rule_id,
    }
}

/// Compares two contracts of the same watch.
pub fn classify(old: &ToolSpec, new: &ToolSpec, overrides: &SeverityOverrides) -> DriftReport {
    let (old_index, new_index) = (SpecIndex::new(old), SpecIndex::new(new));
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
    let mut out = Emitter::new(overrides).for_kind(new.kind);
    let mut schemas = SchemaDiffer::new(&old.definitions, &new.definitions);

    if old.remote != new.remote {
        out.emit(
            "execution-target-changed",
            "remote",
            "execution_target_changed",
            Some(json!(old.remote.base_urls)),
            Some(json!(new.remote.base_urls)),
            format!(
                "The invocation target changed from {} to {}.",
                describe_remote(old),
                describe_remote(new)
            ),
        );
    }

    if old.instructions != new.instructions {
        out.emit(
            "instructions-changed",
            "instructions",
            "instructions_changed",
            old.instructions.as_ref().map(|t| json!(t)),
            new.instructions.as_ref().map(|t| json!(t)),
            "The server instructions that reach a model changed.".into(),
        );
    }
    let pairs = match_endpoints(&old.endpoints, &new.endpoints);
    note_possible_renames(&pairs, &mut out);
    let mut unexplained: Vec<(&EndpointSpec, &EndpointSpec)> = Vec::new();
    for pair in &pairs {
        match pair {
            EndpointPair::Removed(o) => out.emit(
                "endpoint-removed",
                &endpoint_path(o),
                "endpoint_removed",
                Some(json!(o.identity())),
                None,
                format!("Endpoint {} ({}) was removed.", o.name, o.identity()),
            ),
            EndpointPair::Added(n) => {
                let (rule, why) = if new.kind == Kind::Mcp {
                    (
                        "tool-added",
                        "its description and schema are new text that reaches a model",
                    )
                } else if n.read_only {
                    ("endpoint-added-read-only", "it is read-only")
                } else {
                    (
                        "endpoint-added-write",
                        "it can change state, so it needs review",
                    )
                };
                out.emit(
                    rule,
                    &endpoint_path(n),
                    "endpoint_added",
                    None,
                    Some(json!(n.identity())),
                    format!("Endpoint {} ({}) was added; {why}.", n.name, n.identity()),
                );
            }
            EndpointPair::Matched(o, n) => {
                let before = out.changes.len();
                let defs_before = schemas.changed_definitions.len();
                compare_endpoint(o, n, &mut schemas, &mut out);
                let explained =
                    out.changes.len() > before || schemas.changed_definitions.len() > defs_before;
                if !explained
                    && old_index.endpoint_fingerprints().get(&o.identity())
                        != new_index.endpoint_fingerprints().get(&n.identity())
                {
                    unexplained.push((o, n));
                }
            }
        }
    }
    // An endpoint whose only difference lies in a shared definition is explained when that
    // definition's change was reported (possibly while comparing another endpoint).
    for (o, n) in unexplained {
        let changed = &schemas.changed_definitions;
        if !old_index.reaches_any(o, changed) && !new_index.reaches_any(n, changed) {
            out.emit(
                "unclassified-change",
                &endpoint_path(n),
                "unclassified_change",
                None,
                None,
                "The endpoint's contract changed in a way no rule explains.".into(),
            );
        }
    }
    let mut changes = std::mem::take(&mut out.changes);
    if changes.is_empty() {
        out.emit(
            "unclassified-change",
            "",
            "unclassified_change",
            Some(json!(old_fingerprint)),
            Some(json!(new_fingerprint)),
            "The contract's fingerprint changed and no rule explains it.".into(),
        );
        changes = std::mem::take(&mut out.changes);
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

fn describe_remote(spec: &ToolSpec) -> String {
    format!(
        "{} via {}",
        spec.remote.base_urls.join(", "),
        spec.remote.transport
    )
}

fn endpoint_path(e: &EndpointSpec) -> String {
    format!("endpoints.{}", e.name)
}

/// A removed and an added endpoint whose contracts are otherwise equal are probably a rename:
/// both stay reported (removal is breaking), and an info change pairs them for the reviewer.
fn note_possible_renames(pairs: &[EndpointPair], out: &mut Emitter) {
    let strip = |e: &EndpointSpec| {
        let mut e = e.clone();
        e.name.clear();
        e.operation_id = None;
        e.path.clear();
        e.path_template.clear();
        e.description = None;
        e
    };
    let added: Vec<(&EndpointSpec, EndpointSpec)> = pairs
        .iter()
        .filter_map(|p| match p {
            EndpointPair::Added(n) => Some((*n, strip(n))),
            _ => None,
        })
        .collect();
    let mut used = BTreeSet::new();
    for pair in pairs {
        let EndpointPair::Removed(o) = pair else {
            continue;
        };
        let body = strip(o);
        if let Some((n, _)) = added
            .iter()
            .find(|(n, stripped)| *stripped == body && !used.contains(&n.identity()))
        {
            used.insert(n.identity());
            out.emit(
                "endpoint-possibly-renamed",
                &endpoint_path(n),
                "endpoint_possibly_renamed",
                Some(json!(o.identity())),
                Some(json!(n.identity())),
                format!(
                    "{} ({}) looks like a rename of the removed {} ({}): same contract, new name.",
                    n.name,
                    n.identity(),
                    o.name,
                    o.identity()
                ),
            );
        }
    }
}

enum EndpointPair<'a> {
    Matched(&'a EndpointSpec, &'a EndpointSpec),
    Removed(&'a EndpointSpec),
    Added(&'a EndpointSpec),
}

/// Matches by `METHOD path` first, then pairs leftovers by operationId (so a method or path
/// change of the same operation is one endpoint that changed, not a removal plus an addition).
fn match_endpoints<'a>(old: &'a [EndpointSpec], new: &'a [EndpointSpec]) -> Vec<EndpointPair<'a>> {
    let new_by_identity: BTreeMap<String, &EndpointSpec> =
        new.iter().map(|e| (e.identity(), e)).collect();
    let mut pairs = Vec::new();
    let mut matched_new = BTreeSet::new();
    let mut old_left = Vec::new();
    for o in old {
        match new_by_identity.get(&o.identity()) {
            Some(n) => {
                matched_new.insert(n.identity());
                pairs.push(EndpointPair::Matched(o, n));
            }
            None => old_left.push(o),
        }
    }
    let mut new_left_by_op: BTreeMap<&str, &EndpointSpec> = BTreeMap::new();
    let mut new_left = Vec::new();
    for n in new.iter().filter(|n| !matched_new.contains(&n.identity())) {
        match &n.operation_id {
            Some(op) => {
                new_left_by_op.insert(op.as_str(), n);
            }
            None => new_left.push(n),
        }
    }
    for o in old_left {
        match o
            .operation_id
            .as_deref()
            .and_then(|op| new_left_by_op.remove(op))
        {
            Some(n) => pairs.push(EndpointPair::Matched(o, n)),
            None => pairs.push(EndpointPair::Removed(o)),
        }
    }
    new_left.extend(new_left_by_op.into_values());
    pairs.extend(new_left.into_iter().map(EndpointPair::Added));
    pairs
}

fn compare_endpoint(
    o: &EndpointSpec,
    n: &EndpointSpec,
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let at = endpoint_path(n);
    if o.name != n.name && o.method == n.method && o.path == n.path {
        out.emit(
            "endpoint-renamed",
            &at,
            "endpoint_renamed",
            Some(json!(o.name)),
            Some(json!(n.name)),
            format!(
                "{} was renamed from {} to {}; callers use the old name.",
                n.identity(),
                o.name,
                n.name
            ),
        );
    }
    if o.method != n.method {
        let escalated = (o.read_only && !n.read_only) || (!o.destructive && n.destructive);
        let (rule, what) = if escalated {
            ("method-escalated", "gained side effects")
        } else {
            ("method-changed", "changed method")
        };
        out.emit(
            rule,
            &format!("{at}.method"),
            "method_changed",
            Some(json!(o.method)),
            Some(json!(n.method)),
            format!("Operation {} {what}: {} → {}.", n.name, o.method, n.method),
        );
    }
    if o.path != n.path {
        out.emit(
            "path-changed",
            &format!("{at}.path"),
            "path_changed",
            Some(json!(o.path_template)),
            Some(json!(n.path_template)),
            format!(
                "Operation {} moved from {} to {}.",
                n.name, o.path_template, n.path_template
            ),
        );
    } else if o.path_template != n.path_template {
        // Only path parameter names changed; the parameter diff below reports the renames.
    }
    if o.description != n.description {
        out.emit(
            "description-changed",
            &format!("{at}.description"),
            "description_changed",
            o.description.as_ref().map(|d| json!(d)),
            n.description.as_ref().map(|d| json!(d)),
            format!("The description of {} changed.", n.name),
        );
    }
    if o.deprecated != n.deprecated {
        out.emit(
            "deprecated-changed",
            &format!("{at}.deprecated"),
            "deprecated_changed",
            Some(json!(o.deprecated)),
            Some(json!(n.deprecated)),
            format!(
                "{} is {} deprecated.",
                n.name,
                if n.deprecated { "now" } else { "no longer" }
            ),
        );
    }
    if o.security != n.security {
        out.emit(
            "security-requirements-changed",
            &format!("{at}.security"),
            "security_changed",
            Some(json!(o.security)),
            Some(json!(n.security)),
            format!("The security requirements of {} changed.", n.name),
        );
    }
    let facts = |e: &EndpointSpec| (e.read_only, e.destructive, e.idempotent, e.open_world);
    if facts(o) != facts(n) && o.method == n.method {
        // Same method, different side-effect facts (MCP annotations, GraphQL, OData kinds).
        let escalated = (o.read_only && !n.read_only)
            || (!o.destructive && n.destructive)
            || (o.idempotent && !n.idempotent)
            || (!o.open_world && n.open_world);
        let show = |e: &EndpointSpec| {
            json!({"read_only": e.read_only, "destructive": e.destructive,
                   "idempotent": e.idempotent, "open_world": e.open_world})
        };
        out.emit(
            if escalated {
                "side-effects-escalated"
            } else {
                "side-effects-reduced"
            },
            &format!("{at}.side_effects"),
            "side_effects_changed",
            Some(show(o)),
            Some(show(n)),
            format!(
                "The side effects of {} {}.",
                n.name,
                if escalated {
                    "grew (it may now write, destroy, repeat effects or reach further)"
                } else {
                    "shrank"
                }
            ),
        );
    }
    if o.title != n.title {
        out.emit(
            "title-changed",
            &format!("{at}.title"),
            "title_changed",
            o.title.as_ref().map(|t| json!(t)),
            n.title.as_ref().map(|t| json!(t)),
            format!("The title of {} changed.", n.name),
        );
    }
    if o.meta != n.meta {
        out.emit(
            "meta-changed",
            &format!("{at}.meta"),
            "meta_changed",
            o.meta.clone(),
            n.meta.clone(),
            format!("The vendor metadata (_meta) of {} changed.", n.name),
        );
    }
    // Webhooks and callbacks run the other way: the provider sends, the consumer answers.
    let (send, receive) = if is_reversed(n) {
        (Direction::Response, Direction::Request)
    } else {
        (Direction::Request, Direction::Response)
    };
    compare_parameters(send, &at, &o.parameters, &n.parameters, schemas, out);
    compare_request_body(
        send,
        &at,
        o.request_body.as_ref(),
        n.request_body.as_ref(),
        schemas,
        out,
    );
    compare_responses(receive, &at, &o.responses, &n.responses, schemas, out);
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
            old_schema.as_ref().unwrap_or(&empty),
            new_schema.as_ref().unwrap_or(&empty),
            direction,
            &format!("{at}.{label}"),
            out,
        );
    }
}

fn compare_parameters(
    send: Direction,
    at: &str,
    old: &[ParameterSpec],
    new: &[ParameterSpec],
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let key = |p: &ParameterSpec| (p.location.clone(), p.name.clone());
    let old_by: BTreeMap<_, _> = old.iter().map(|p| (key(p), p)).collect();
    let new_by: BTreeMap<_, _> = new.iter().map(|p| (key(p), p)).collect();
    for (k, o) in &old_by {
        let p_at = format!("{at}.parameters.{}.{}", k.0, k.1);
        match new_by.get(k) {
            None => {
                let moved = new
                    .iter()
                    .find(|n| n.name == o.name)
                    .map(|n| n.location.clone());
                let message = match &moved {
                    Some(loc) => format!("{} parameter '{}' moved to {loc}.", o.location, o.name),
                    None => format!("{} parameter '{}' was removed.", o.location, o.name),
                };
                out.emit(
                    "request-parameter-removed",
                    &p_at,
                    "parameter_removed",
                    Some(json!(o.name)),
                    None,
                    message,
                );
            }
            Some(n) => {
                if o.required != n.required {
                    let (rule, word) = if n.required {
                        ("request-parameter-became-required", "required")
                    } else {
                        ("request-parameter-became-optional", "optional")
                    };
                    out.emit(
                        rule,
                        &format!("{p_at}.required"),
                        "parameter_required_changed",
                        Some(json!(o.required)),
                        Some(json!(n.required)),
                        format!("{} parameter '{}' became {word}.", n.location, n.name),
                    );
                }
                // A positional (JSON-RPC) parameter's index is judged on its own below.
                let without_position = |p: &ParameterSpec| {
                    let mut style = p.style.clone();
                    style.remove("position");
                    style
                };
                if let (Some(op), Some(np)) = (o.style.get("position"), n.style.get("position")) {
                    if op != np {
                        out.emit(
                            "request-parameter-reordered",
                            &format!("{p_at}.position"),
                            "parameter_reordered",
                            Some(op.clone()),
                            Some(np.clone()),
                            format!(
                                "Positional parameter '{}' moved from position {op} to {np}.",
                                n.name
                            ),
                        );
                    }
                }
                if without_position(o) != without_position(n)
                    || o.style.contains_key("position") != n.style.contains_key("position")
                {
                    out.emit(
                        "request-parameter-style-changed",
                        &format!("{p_at}.style"),
                        "parameter_style_changed",
                        Some(json!(o.style)),
                        Some(json!(n.style)),
                        format!(
                            "The serialization of {} parameter '{}' changed.",
                            n.location, n.name
                        ),
                    );
                }
                if o.description != n.description {
                    out.emit(
                        "description-changed",
                        &format!("{p_at}.description"),
                        "description_changed",
                        o.description.as_ref().map(|d| json!(d)),
                        n.description.as_ref().map(|d| json!(d)),
                        format!(
                            "The description of {} parameter '{}' changed.",
                            n.location, n.name
                        ),
                    );
                }
                if o.deprecated != n.deprecated {
                    out.emit(
                        "deprecated-changed",
                        &format!("{p_at}.deprecated"),
                        "deprecated_changed",
                        Some(json!(o.deprecated)),
                        Some(json!(n.deprecated)),
                        format!("{} parameter '{}' deprecation changed.", n.location, n.name),
                    );
                }
                schemas.compare(&o.schema, &n.schema, send, &format!("{p_at}.schema"), out);
            }
        }
    }
    for (k, n) in &new_by {
        if old_by.contains_key(k) {
            continue;
        }
        let p_at = format!("{at}.parameters.{}.{}", k.0, k.1);
        // A positional parameter may only be added after every parameter callers already send.
        let not_trailing = position_of(n).is_some_and(|pos| {
            new.iter()
                .filter(|p| old_by.contains_key(&key(p)))
                .filter_map(position_of)
                .any(|existing| existing > pos)
        });
        let (rule, word) = if n.required {
            ("request-parameter-added-required", "Required")
        } else if not_trailing {
            (
                "request-parameter-added-not-trailing",
                "Optional (not trailing, so positions shift)",
            )
        } else {
            ("request-parameter-added-optional", "Optional")
        };
        out.emit(
            rule,
            &p_at,
            "parameter_added",
            None,
            Some(json!(n.name)),
            format!("{word} {} parameter '{}' was added.", n.location, n.name),
        );
    }
}

/// The index of a positional (JSON-RPC) parameter, when it has one.
fn position_of(p: &ParameterSpec) -> Option<u64> {
    p.style.get("position").and_then(Value::as_u64)
}

fn compare_request_body(
    send: Direction,
    at: &str,
    old: Option<&RequestBody>,
    new: Option<&RequestBody>,
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    let b_at = format!("{at}.request_body");
    match (old, new) {
        (None, None) => {}
        (Some(_), None) => out.emit(
            "request-body-removed",
            &b_at,
            "request_body_removed",
            None,
            None,
            "The request body was removed.".into(),
        ),
        (None, Some(n)) => {
            let (rule, word) = if n.required {
                ("request-body-added-required", "A required")
            } else {
                ("request-body-added-optional", "An optional")
            };
            out.emit(
                rule,
                &b_at,
                "request_body_added",
                None,
                None,
                format!("{word} request body was added."),
            );
        }
        (Some(o), Some(n)) => {
            if o.required != n.required {
                let (rule, word) = if n.required {
                    ("request-body-became-required", "required")
                } else {
                    ("request-body-became-optional", "optional")
                };
                out.emit(
                    rule,
                    &format!("{b_at}.required"),
                    "request_body_required_changed",
                    Some(json!(o.required)),
                    Some(json!(n.required)),
                    format!("The request body became {word}."),
                );
            }
            if o.description != n.description {
                out.emit(
                    "description-changed",
                    &format!("{b_at}.description"),
                    "description_changed",
                    o.description.as_ref().map(|d| json!(d)),
                    n.description.as_ref().map(|d| json!(d)),
                    "The request body's description changed.".into(),
                );
            }
            for (media, old_schema) in &o.content {
                let m_at = format!("{b_at}.content.{media}");
                match n.content.get(media) {
                    None => out.emit(
                        "request-media-type-removed",
                        &m_at,
                        "media_type_removed",
                        Some(json!(media)),
                        None,
                        format!("The request body no longer accepts {media}."),
                    ),
                    Some(new_schema) => schemas.compare(
                        old_schema,
                        new_schema,
                        send,
                        &format!("{m_at}.schema"),
                        out,
                    ),
                }
            }
            for media in n.content.keys().filter(|m| !o.content.contains_key(*m)) {
                out.emit(
                    "request-media-type-added",
                    &format!("{b_at}.content.{media}"),
                    "media_type_added",
                    None,
                    Some(json!(media)),
                    format!("The request body now also accepts {media}."),
                );
            }
        }
    }
}

/// Webhook and callback endpoints are called by the provider, so their directions flip.
fn is_reversed(e: &EndpointSpec) -> bool {
    matches!(e.method.as_str(), "WEBHOOK" | "CALLBACK")
}

fn is_success(status: &str) -> bool {
    status.starts_with('2')
}

fn compare_responses(
    receive: Direction,
    at: &str,
    old: &BTreeMap<String, ResponseSpec>,
    new: &BTreeMap<String, ResponseSpec>,
    schemas: &mut SchemaDiffer,
    out: &mut Emitter,
) {
    for (status, o) in old {
        let r_at = format!("{at}.responses.{status}");
        let Some(n) = new.get(status) else {
            let rule = if is_success(status) {
                "response-success-status-removed"
            } else {
                "response-error-status-removed"
            };
            out.emit(
                rule,
                &r_at,
                "response_removed",
                Some(json!(status)),
                None,
                format!("Response {status} was removed."),
            );
            continue;
        };
        if o.description != n.description {
            out.emit(
                "description-changed",
                &format!("{r_at}.description"),
                "description_changed",
                o.description.as_ref().map(|d| json!(d)),
                n.description.as_ref().map(|d| json!(d)),
                format!("The description of response {status} changed."),
            );
        }
        for (media, old_schema) in &o.content {
            let m_at = format!("{r_at}.content.{media}");
            match n.content.get(media) {
                None => out.emit(
                    "response-media-type-removed",
                    &m_at,
                    "media_type_removed",
                    Some(json!(media)),
                    None,
                    format!("Response {status} no longer returns {media}."),
                ),
                Some(new_schema) => schemas.compare(
                    old_schema,
                    new_schema,
                    receive,
                    &format!("{m_at}.schema"),
                    out,
                ),
            }
        }
        for media in n.content.keys().filter(|m| !o.content.contains_key(*m)) {
            out.emit(
                "response-media-type-added",
                &format!("{r_at}.content.{media}"),
                "media_type_added",
                None,
                Some(json!(media)),
                format!("Response {status} may now also return {media}."),
            );
        }
        for (header, old_schema) in &o.headers {
            let h_at = format!("{r_at}.headers.{header}");
            match n.headers.get(header) {
                None => out.emit(
                    "response-header-removed",
                    &h_at,
                    "response_header_removed",
                    Some(json!(header)),
                    None,
                    format!("Response {status} no longer sends header {header}."),
                ),
                Some(new_schema) => schemas.compare(
                    old_schema,
                    new_schema,
                    receive,
                    &format!("{h_at}.schema"),
                    out,
                ),
            }
        }
        for header in n.headers.keys().filter(|h| !o.headers.contains_key(*h)) {
            out.emit(
                "response-header-added",
                &format!("{r_at}.headers.{header}"),
                "response_header_added",
                None,
                Some(json!(header)),
                format!("Response {status} now sends header {header}."),
            );
        }
    }
    for status in new.keys().filter(|s| !old.contains_key(*s)) {
        let rule = if is_success(status) {
            "response-success-status-added"
        } else {
            "response-error-status-added"
        };
        out.emit(
            rule,
            &format!("{at}.responses.{status}"),
            "response_added",
            None,
            Some(json!(status)),
            format!("Response {status} was added."),
        );
    }
}
