//! Endpoint rules: an endpoint's presence, name, method, path, text, security and side
//! effects, judged on one matched pair (or one unmatched side) the classifier hands over;
//! parameters, bodies, responses and schemas are their own families.

use super::emit::Emitter;
use super::pair::EndpointPair;
use super::rule::{Rule, Side};
use super::shared::{
    endpoint_path, DEPRECATED_CHANGED, DESCRIPTION_CHANGED, ENDPOINT_ADDED_READ_ONLY,
    ENDPOINT_ADDED_WRITE, ENDPOINT_REMOVED, EXTENSION_CHANGED, META_CHANGED, TITLE_CHANGED,
    UNCLASSIFIED_CHANGE,
};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{EndpointSpec, EndpointSubKind, Kind, Severity::*};
use serde_json::json;
use std::collections::BTreeSet;

pub static ENDPOINT_POSSIBLY_RENAMED: Rule = Rule::new(
    "endpoint-possibly-renamed",
    Info,
    Side::Endpoint,
    "A removed and an added endpoint have the same contract: probably a rename (both are also reported).",
);

pub static ENDPOINT_RENAMED: Rule = Rule::new(
    "endpoint-renamed",
    Breaking,
    Side::Endpoint,
    "The endpoint kept its method and path but its name (operationId) changed.",
);

pub static METHOD_CHANGED: Rule = Rule::new(
    "method-changed",
    Breaking,
    Side::Endpoint,
    "The same operation moved to another HTTP method without gaining side effects.",
);

pub static METHOD_ESCALATED: Rule = Rule::new(
    "method-escalated",
    Security,
    Side::Endpoint,
    "The same operation gained side effects: read-only to write, or non-destructive to destructive.",
);

pub static PATH_CHANGED: Rule = Rule::new(
    "path-changed",
    Breaking,
    Side::Endpoint,
    "The same operation (by operationId) moved to another path.",
);

pub static SERVERS_CHANGED: Rule = Rule::new(
    "servers-changed",
    Security,
    Side::Endpoint,
    "Where one endpoint's calls go changed: its operation- or path-level `servers` override (URL or server variables) was added, removed or changed.",
);

pub static SECURITY_REQUIREMENTS_CHANGED: Rule = Rule::new(
    "security-requirements-changed",
    Security,
    Side::Endpoint,
    "The authentication or authorization requirements of an endpoint changed.",
);

pub static SIDE_EFFECTS_ESCALATED: Rule = Rule::new(
    "side-effects-escalated",
    Security,
    Side::Endpoint,
    "The same endpoint gained side effects: read-only to write, non-destructive to destructive, idempotent to not, or closed to open world.",
);

pub static SIDE_EFFECTS_REDUCED: Rule = Rule::new(
    "side-effects-reduced",
    Compatible,
    Side::Endpoint,
    "The same endpoint lost side effects (e.g. became read-only or idempotent).",
);

/// An endpoint of the old contract that the new one lacks.
pub(super) fn removed(o: &EndpointSpec, out: &mut Emitter) {
    out.emit(
        &ENDPOINT_REMOVED,
        &endpoint_path(o),
        ChangeKind::EndpointRemoved,
        Some(json!(o.identity())),
        None,
        format!("Endpoint {} ({}) was removed.", o.name, o.as_written()),
    );
}

/// An endpoint of the new contract that the old one lacks.
pub(super) fn added(n: &EndpointSpec, kind: Kind, out: &mut Emitter) {
    // MCP judges every new endpoint by its own rules (the emitter's rule swap); only the
    // reason told differs.
    let (rule, why) = if kind == Kind::Mcp {
        (
            if n.read_only {
                &ENDPOINT_ADDED_READ_ONLY
            } else {
                &ENDPOINT_ADDED_WRITE
            },
            if n.sub_kind() == EndpointSubKind::Tool {
                "its description and schema are new text that reaches a model"
            } else {
                "its text is new text that reaches a model"
            },
        )
    } else if n.read_only {
        (&ENDPOINT_ADDED_READ_ONLY, "it is read-only")
    } else {
        (
            &ENDPOINT_ADDED_WRITE,
            "it can change state, so it needs review",
        )
    };
    out.emit(
        rule,
        &endpoint_path(n),
        ChangeKind::EndpointAdded,
        None,
        Some(json!(n.identity())),
        format!("Endpoint {} ({}) was added; {why}.", n.name, n.as_written()),
    );
}

/// A removed and an added endpoint whose contracts are otherwise equal are probably a rename:
/// both stay reported (removal is breaking), and an info change pairs them for the reviewer.
pub(super) fn note_possible_renames(pairs: &[EndpointPair], out: &mut Emitter) {
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
                &ENDPOINT_POSSIBLY_RENAMED,
                &endpoint_path(n),
                ChangeKind::EndpointPossiblyRenamed,
                Some(json!(o.identity())),
                Some(json!(n.identity())),
                format!(
                    "{} ({}) looks like a rename of the removed {} ({}): same contract, new name.",
                    n.name,
                    n.as_written(),
                    o.name,
                    o.as_written()
                ),
            );
        }
    }
}

/// The endpoint-level facts of a matched pair (its `meta` is [`compare_meta`]'s or a kind's).
pub(super) fn compare_endpoint(o: &EndpointSpec, n: &EndpointSpec, at: &str, out: &mut Emitter) {
    if o.name != n.name && o.method == n.method && o.path == n.path {
        out.emit(
            &ENDPOINT_RENAMED,
            at,
            ChangeKind::EndpointRenamed,
            Some(json!(o.name)),
            Some(json!(n.name)),
            format!(
                "{} was renamed from {} to {}; callers use the old name.",
                n.as_written(),
                o.name,
                n.name
            ),
        );
    }
    if o.method != n.method {
        let escalated = (o.read_only && !n.read_only) || (!o.destructive && n.destructive);
        let (rule, what) = if escalated {
            (&METHOD_ESCALATED, "gained side effects")
        } else {
            (&METHOD_CHANGED, "changed method")
        };
        out.emit(
            rule,
            &format!("{at}.method"),
            ChangeKind::MethodChanged,
            Some(json!(o.method)),
            Some(json!(n.method)),
            format!("Operation {} {what}: {} → {}.", n.name, o.method, n.method),
        );
    }
    if o.path != n.path {
        out.emit(
            &PATH_CHANGED,
            &format!("{at}.path"),
            ChangeKind::PathChanged,
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
            &DESCRIPTION_CHANGED,
            &format!("{at}.description"),
            ChangeKind::DescriptionChanged,
            o.description.as_ref().map(|d| json!(d)),
            n.description.as_ref().map(|d| json!(d)),
            format!("The description of {} changed.", n.name),
        );
    }
    if o.deprecated != n.deprecated {
        out.emit(
            &DEPRECATED_CHANGED,
            &format!("{at}.deprecated"),
            ChangeKind::DeprecatedChanged,
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
            &SECURITY_REQUIREMENTS_CHANGED,
            &format!("{at}.security"),
            ChangeKind::SecurityChanged,
            Some(json!(o.security)),
            Some(json!(n.security)),
            format!("The security requirements of {} changed.", n.name),
        );
    }
    if o.servers != n.servers {
        out.emit(
            &SERVERS_CHANGED,
            &format!("{at}.servers"),
            ChangeKind::ServersChanged,
            Some(json!(o.servers)),
            Some(json!(n.servers)),
            format!("The servers {} is called on changed.", n.name),
        );
    }
    compare_kept(at, &n.name, &o.extensions, &n.extensions, out);
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
                &SIDE_EFFECTS_ESCALATED
            } else {
                &SIDE_EFFECTS_REDUCED
            },
            &format!("{at}.side_effects"),
            ChangeKind::SideEffectsChanged,
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
            &TITLE_CHANGED,
            &format!("{at}.title"),
            ChangeKind::TitleChanged,
            o.title.as_ref().map(|t| json!(t)),
            n.title.as_ref().map(|t| json!(t)),
            format!("The title of {} changed.", n.name),
        );
    }
}

/// A matched pair's `meta` where its kind does not model it: vendor extensions (`x-…` keys)
/// are judged by `extension-changed`, any other difference of the kept fields by
/// `meta-changed`.
pub(super) fn compare_meta(o: &EndpointSpec, n: &EndpointSpec, at: &str, out: &mut Emitter) {
    if o.meta != n.meta {
        // Vendor extensions (`x-…` keys) are judged by `extension-changed`; any other
        // difference of the kept fields by `meta-changed`, as before.
        let empty = serde_json::Map::new();
        let fields = |m: &Option<Box<serde_json::Value>>| match m.as_deref() {
            Some(serde_json::Value::Object(map)) => Some(map.clone()),
            _ => None,
        };
        let (om, nm) = (fields(&o.meta), fields(&n.meta));
        let (oo, no) = (om.as_ref().unwrap_or(&empty), nm.as_ref().unwrap_or(&empty));
        let keys: std::collections::BTreeSet<&String> = oo.keys().chain(no.keys()).collect();
        let changed: Vec<&String> = keys
            .into_iter()
            .filter(|k| oo.get(*k) != no.get(*k))
            .collect();
        let only_extensions = (om.is_some() || o.meta.is_none())
            && (nm.is_some() || n.meta.is_none())
            && changed.iter().all(|k| k.starts_with("x-"));
        for key in changed.iter().filter(|k| k.starts_with("x-")) {
            out.emit(
                &EXTENSION_CHANGED,
                &format!("{at}.meta.{key}"),
                ChangeKind::ExtensionChanged,
                oo.get(*key).cloned(),
                no.get(*key).cloned(),
                format!("The vendor extension {key} of {} changed.", n.name),
            );
        }
        if !only_extensions {
            out.emit(
                &META_CHANGED,
                &format!("{at}.meta"),
                ChangeKind::MetaChanged,
                o.meta.as_deref().cloned(),
                n.meta.as_deref().cloned(),
                format!("The vendor metadata (_meta) of {} changed.", n.name),
            );
        }
    }
}

/// Keywords an endpoint keeps verbatim (deny by default), each judged at its exact path: a
/// vendor `x-` key by `extension-changed`, a `description` or `summary` as documentation, any
/// other by `unclassified-change`.
pub(super) fn compare_kept(
    at: &str,
    name: &str,
    old: &crate::core::model::SmallMap<String, serde_json::Value>,
    new: &crate::core::model::SmallMap<String, serde_json::Value>,
    out: &mut Emitter,
) {
    if old == new {
        return;
    }
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let (before, after) = (old.get(key), new.get(key));
        if before == after || crate::core::sunset::judged_extension(key, before, after) {
            // (A stability level or sunset that moved is judged by the stability rules.)
            continue;
        }
        let last = key.rsplit('.').next().unwrap_or(key);
        let (rule, kind) = if last.starts_with("x-") {
            (&EXTENSION_CHANGED, ChangeKind::ExtensionChanged)
        } else if last == "description" || last == "summary" || key == "result.name" {
            // (A result's name is a label: callers never send or receive it.)
            (&DESCRIPTION_CHANGED, ChangeKind::DescriptionChanged)
        } else {
            (&UNCLASSIFIED_CHANGE, ChangeKind::UnclassifiedChange)
        };
        out.emit(
            rule,
            &format!("{at}.{key}"),
            kind,
            before.cloned(),
            after.cloned(),
            format!("The field {key} of {name}, kept but not modelled, changed."),
        );
    }
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &ENDPOINT_POSSIBLY_RENAMED,
    &ENDPOINT_RENAMED,
    &METHOD_CHANGED,
    &METHOD_ESCALATED,
    &PATH_CHANGED,
    &SECURITY_REQUIREMENTS_CHANGED,
    &SERVERS_CHANGED,
    &SIDE_EFFECTS_ESCALATED,
    &SIDE_EFFECTS_REDUCED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{
        at, check_case, mcp, openapi, openapi_pair, spec_edit, Case, CREATE, LIST,
    };
    use serde_json::json;

    /// One case per rule of this family (more where kinds differ).
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &SERVERS_CHANGED,
                openapi(|d| {
                    at(d, LIST)["servers"] = json!([{"url": "https://evil.example.net"}]);
                }),
            ),
            Case::new(
                &SERVERS_CHANGED,
                openapi_pair(
                    |d| {
                        at(d, "/paths/~1pets")["servers"] = json!([{"url": "https://{region}.example.com",
                            "variables": {"region": {"default": "eu", "enum": ["eu", "us"]}}}]);
                    },
                    |d| {
                        at(d, "/paths/~1pets")["servers"] = json!([{"url": "https://{region}.example.com",
                            "variables": {"region": {"default": "eu", "enum": ["eu", "us", "attacker"]}}}]);
                    },
                ),
            ),
            Case::new(
                &DEPRECATED_CHANGED,
                openapi(|d| {
                    at(d, LIST)["deprecated"] = json!(true);
                }),
            ),
            Case::new(
                &DESCRIPTION_CHANGED,
                openapi(|d| {
                    at(d, LIST)["description"] = json!("List all pets.");
                }),
            ),
            Case::new(
                &ENDPOINT_ADDED_READ_ONLY,
                openapi(|d| {
                    at(d, "/paths")["/toys"] = json!({"get": {"operationId": "listToys", "responses": {"200": {"description": "ok"}}}});
                }),
            ),
            Case::new(
                &ENDPOINT_ADDED_WRITE,
                openapi(|d| {
                    at(d, "/paths")["/toys"] = json!({"delete": {"operationId": "deleteToys", "responses": {"204": {"description": "ok"}}}});
                }),
            ),
            Case::new(
                &ENDPOINT_POSSIBLY_RENAMED,
                openapi(|d| {
                    let create = at(d, CREATE).clone();
                    at(d, "/paths/~1pets")
                        .as_object_mut()
                        .unwrap()
                        .remove("post");
                    at(d, "/paths")["/animals"] = json!({"post": create});
                    at(d, "/paths/~1animals/post")["operationId"] = json!("createAnimal");
                }),
            ),
            Case::new(
                &ENDPOINT_REMOVED,
                openapi(|d| {
                    at(d, "/paths/~1pets")
                        .as_object_mut()
                        .map(|m| m.remove("post"));
                }),
            ),
            Case::new(
                &ENDPOINT_RENAMED,
                openapi(|d| {
                    at(d, LIST)["operationId"] = json!("getPets");
                }),
            ),
            Case::new(
                &METHOD_CHANGED,
                openapi(|d| {
                    let create = at(d, CREATE).clone();
                    let item = at(d, "/paths/~1pets").as_object_mut().unwrap();
                    item.remove("post");
                    item.insert("put".into(), create);
                }),
            ),
            Case::new(
                &METHOD_ESCALATED,
                openapi(|d| {
                    let list = at(d, LIST).clone();
                    let item = at(d, "/paths/~1pets").as_object_mut().unwrap();
                    item.remove("get");
                    item.insert("patch".into(), list);
                }),
            ),
            Case::new(
                &PATH_CHANGED,
                openapi(|d| {
                    let list = at(d, LIST).clone();
                    at(d, "/paths/~1pets")
                        .as_object_mut()
                        .unwrap()
                        .remove("get");
                    at(d, "/paths")["/animals"] = json!({"get": list});
                }),
            ),
            Case::new(
                &SECURITY_REQUIREMENTS_CHANGED,
                openapi(|d| {
                    at(d, LIST)["security"] = json!([{"apiKey": []}]);
                }),
            ),
            Case::new(
                &META_CHANGED,
                spec_edit(|s| {
                    std::sync::Arc::make_mut(&mut s.endpoints[0]).meta =
                        Some(Box::new(json!({"vendor/x": 1})))
                }),
            ),
            Case::new(
                &SIDE_EFFECTS_ESCALATED,
                spec_edit(
                    // endpoints[0] is DELETE /pets/{} (destructive), endpoints[1] is GET /pets (read-only).
                    |s| std::sync::Arc::make_mut(&mut s.endpoints[1]).read_only = false,
                ),
            ),
            Case::new(
                &SIDE_EFFECTS_ESCALATED,
                spec_edit(|s| std::sync::Arc::make_mut(&mut s.endpoints[1]).idempotent = false),
            ),
            Case::new(
                &SIDE_EFFECTS_REDUCED,
                spec_edit(|s| std::sync::Arc::make_mut(&mut s.endpoints[0]).destructive = false),
            ),
            Case::new(
                &TITLE_CHANGED,
                spec_edit(|s| {
                    std::sync::Arc::make_mut(&mut s.endpoints[1]).title = Some("List pets".into())
                }),
            ),
            Case::new(
                &SIDE_EFFECTS_ESCALATED,
                mcp(
                    // Dropping readOnlyHint: true makes the tool read_only false, destructive true.
                    |d| {
                        d["tools"][0]["annotations"]
                            .as_object_mut()
                            .unwrap()
                            .remove("readOnlyHint");
                    },
                ),
            ),
            Case::new(
                &SIDE_EFFECTS_ESCALATED,
                mcp(|d| {
                    d["tools"][0]["annotations"]["openWorldHint"] = json!(true);
                }),
            ),
            Case::new(
                &SIDE_EFFECTS_REDUCED,
                mcp(|d| {
                    d["tools"][1]["annotations"] = json!({"destructiveHint": false});
                }),
            ),
            Case::new(
                &META_CHANGED,
                mcp(|d| {
                    d["tools"][1]["_meta"] = json!({"vendor/x": "y"});
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
