//! Shared fixtures and the one rule-case helper, [`check`]. Each rule family keeps its cases
//! beside its rules (`cases::cases()` in every family file), gathered through the registration
//! list `rules::FAMILIES`; [`every_rule_has_a_case`] fails when a registered rule has none. Below them: tests of the classifier as a whole.

use super::rules::{Rule, SeverityOverrides, ALL, FAMILIES};
use super::{classify, ClassifyPolicy, DriftReport};
use crate::core::model::{Compatibility, Kind, Severity, ToolSpec};
use crate::core::normalize::openapi::normalize_value;
use serde_json::{json, Value};

/// A petstore-like OpenAPI 3.0 document; `edit` changes it.
pub(super) fn doc(edit: impl FnOnce(&mut Value)) -> Value {
    let mut d = json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.0.0"},
        "servers": [{"url": "https://api.example.com/v1"}],
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "description": "List pets.",
                    "parameters": [
                        {"name": "limit", "in": "query", "required": false,
                         "schema": {"type": "integer", "maximum": 100, "minimum": 1}}
                    ],
                    "responses": {
                        "200": {"description": "ok",
                                "headers": {"X-Next": {"schema": {"type": "string"}}},
                                "content": {"application/json": {"schema": {
                                    "type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}},
                        "default": {"description": "error"}
                    }
                },
                "post": {
                    "operationId": "createPet",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}}},
                    "responses": {"201": {"description": "created"}}
                }
            }
        },
        "components": {"schemas": {
            "Pet": {"type": "object", "required": ["id", "name"], "properties": {
                "id": {"type": "integer", "format": "int64"},
                "name": {"type": "string", "maxLength": 50},
                "status": {"type": "string", "enum": ["available", "sold"]},
                "tag": {"type": "string"}
            }},
            "NewPet": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "maxLength": 50, "pattern": "^[a-z]+$"},
                "kind": {"type": "string", "enum": ["cat", "dog"]},
                "age": {"type": "integer"},
                "tag": {"type": "string"}
            }}
        }}
    });
    edit(&mut d);
    d
}

pub(super) fn at<'a>(v: &'a mut Value, pointer: &str) -> &'a mut Value {
    v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in test document"))
}

pub(super) const LIST: &str = "/paths/~1pets/get";
pub(super) const CREATE: &str = "/paths/~1pets/post";
pub(super) const PET: &str = "/components/schemas/Pet";
pub(super) const NEW_PET: &str = "/components/schemas/NewPet";

pub(super) type Edit = fn(&mut Value);
pub(super) type SpecEdit = fn(&mut ToolSpec);
pub(super) type RpcEdit = fn(&mut Vec<Value>);
/// An (old, new) pair of contracts.
pub(super) type Pair = (ToolSpec, ToolSpec);

/// The base document, then the base document with `edit`.
pub(super) fn openapi(edit: Edit) -> Pair {
    let old = normalize_value("acme.pets", &doc(|_| {})).expect("old normalizes");
    let new = normalize_value("acme.pets", &doc(edit)).expect("new normalizes");
    (old, new)
}

/// The base document with `old`, then the base document with `new`.
pub(super) fn openapi_pair(old: Edit, new: Edit) -> Pair {
    let o = normalize_value("acme.pets", &doc(old)).expect("old normalizes");
    let n = normalize_value("acme.pets", &doc(new)).expect("new normalizes");
    (o, n)
}

/// For rules whose natural example is the reverse of an edit: `edit` makes the OLD document
/// (the base is the new one).
pub(super) fn openapi_reversed(edit: Edit) -> Pair {
    let (base, edited) = openapi(edit);
    (edited, base)
}

/// For contract fields no OpenAPI document carries (they come from other kinds, such as MCP
/// annotations): `edit` is applied to the normalized new spec. endpoints[0] is DELETE
/// /pets/{} (destructive), endpoints[1] is GET /pets (read-only).
pub(super) fn spec_edit(edit: SpecEdit) -> Pair {
    let base = normalize_value("acme.pets", &doc(|d| {
        at(d, "/paths")["/pets/{id}"] = json!({"delete": {"operationId": "deletePet", "responses": {"204": {"description": "gone"}}}});
        at(d, "/paths/~1pets").as_object_mut().map(|m| m.remove("post"));
    }))
    .unwrap();
    let (del, get) = (0, 1);
    assert!(base.endpoints[del].destructive && base.endpoints[get].read_only);
    let mut new = base.clone();
    edit(&mut new);
    (base, new)
}

/// An MCP tool list (kind mcp): rules for model-facing text differ from other kinds.
fn mcp_doc(edit: impl FnOnce(&mut Value)) -> Value {
    let mut d = json!({
        "instructions": "Use read_note to read notes.",
        "tools": [
            {"name": "read_note", "title": "Read note", "description": "Read a note by id.",
             "inputSchema": {"type": "object", "required": ["id"],
                             "properties": {"id": {"type": "string", "description": "Note id."}}},
             "annotations": {"readOnlyHint": true, "openWorldHint": false}},
            {"name": "delete_note", "description": "Delete a note.",
             "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}}
        ],
        "prompts": [
            {"name": "summarize", "title": "Summarize", "description": "Summarize a note.",
             "arguments": [{"name": "id", "description": "Note id.", "required": true}],
             "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize it."}}]}
        ],
        "resourceTemplates": [
            {"uriTemplate": "notes://{id}", "name": "Note", "mimeType": "text/plain",
             "description": "One note."}
        ],
        "resources": [
            {"uri": "notes://1", "name": "First note", "description": "The first note.",
             "size": 12, "annotations": {"audience": ["user"], "lastModified": "2026-01-01T00:00:00Z"}}
        ],
        "capabilities": {"tools": {"listChanged": true}, "prompts": {}, "resources": {}}
    });
    edit(&mut d);
    d
}

/// The base MCP tool list, then the tool list with `edit`.
pub(super) fn mcp(edit: Edit) -> Pair {
    use crate::core::normalize::mcp;
    let old = mcp::normalize_value("acme.notes", &mcp_doc(|_| {})).unwrap();
    let new = mcp::normalize_value("acme.notes", &mcp_doc(edit)).unwrap();
    (old, new)
}

/// A SQLite catalog (kind sqlite): relations[0] is the table `posts` (a foreign key to
/// users, an index, a trigger), relations[1] the table `users` (a unique email),
/// relations[2] the view `names`; triggers[0] is `touch` on posts.
pub(super) fn sqlite_catalog() -> Value {
    json!({
        "format": crate::core::normalize::sqlite::CATALOG_FORMAT,
        "relations": [
            {"name": "posts", "kind": "table", "strict": false, "without_rowid": false,
             "sql": "CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), title TEXT DEFAULT 'untitled')",
             "columns": [
                {"name": "id", "declared_type": "INTEGER", "not_null": false, "default": null, "pk": 1, "hidden": 0},
                {"name": "user_id", "declared_type": "INTEGER", "not_null": true, "default": null, "pk": 0, "hidden": 0},
                {"name": "title", "declared_type": "TEXT", "not_null": false, "default": "'untitled'", "pk": 0, "hidden": 0}
             ],
             "foreign_keys": [{"id": 0, "seq": 0, "table": "users", "from": "user_id", "to": "id",
                               "on_update": "NO ACTION", "on_delete": "NO ACTION", "match": "NONE"}],
             "indexes": [{"name": "posts_user", "unique": false, "origin": "c", "partial": false,
                          "columns": ["user_id"], "sql": "CREATE INDEX posts_user ON posts(user_id)"}]},
            {"name": "users", "kind": "table", "strict": false, "without_rowid": false,
             "sql": "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE)",
             "columns": [
                {"name": "id", "declared_type": "INTEGER", "not_null": false, "default": null, "pk": 1, "hidden": 0},
                {"name": "name", "declared_type": "TEXT", "not_null": true, "default": null, "pk": 0, "hidden": 0},
                {"name": "email", "declared_type": "TEXT", "not_null": false, "default": null, "pk": 0, "hidden": 0}
             ],
             "foreign_keys": [],
             "indexes": [{"name": "sqlite_autoindex_users_1", "unique": true, "origin": "u", "partial": false,
                          "columns": ["email"], "sql": null}]},
            {"name": "names", "kind": "view", "strict": false, "without_rowid": false,
             "sql": "CREATE VIEW names AS SELECT name FROM users",
             "columns": [{"name": "name", "declared_type": "TEXT", "not_null": false, "default": null, "pk": 0, "hidden": 0}],
             "foreign_keys": [], "indexes": []}
        ],
        "triggers": [{"name": "touch", "table": "posts",
                      "sql": "CREATE TRIGGER touch AFTER INSERT ON posts BEGIN SELECT 1; END"}]
    })
}

/// The base SQLite catalog, then the catalog with `edit`.
pub(super) fn sqlite(edit: Edit) -> Pair {
    use crate::core::normalize::sqlite::normalize;
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    let old = normalize("acme.app", &bytes(&sqlite_catalog())).unwrap();
    let mut edited = sqlite_catalog();
    edit(&mut edited);
    let new = normalize("acme.app", &bytes(&edited)).unwrap();
    (old, new)
}

/// A PostgreSQL catalog (kind postgres): relations[0] is the table `public.orders`,
/// functions[0] the STABLE function `public.total(integer)` granted to `app`.
pub(super) fn postgres_catalog() -> Value {
    json!({
        "format": crate::core::normalize::postgres::CATALOG_FORMAT,
        "relations": [
            {"schema": "public", "name": "orders", "kind": "r", "row_security": false,
             "force_row_security": false, "privileges": [], "definition": null,
             "columns": [
                {"name": "id", "type_name": "integer", "not_null": true, "default": null, "identity": "a",
                 "generated": "", "enum_values": null, "domain_base": null, "domain_not_null": false},
                {"name": "amount", "type_name": "numeric(10,2)", "not_null": true, "default": null, "identity": "",
                 "generated": "", "enum_values": null, "domain_base": null, "domain_not_null": false}
             ],
             "constraints": [{"name": "orders_pkey", "kind": "p", "definition": "PRIMARY KEY (id)", "columns": ["id"]}],
             "indexes": [{"name": "orders_pkey", "definition": "CREATE UNIQUE INDEX orders_pkey ON public.orders USING btree (id)"}],
             "triggers": [], "policies": []}
        ],
        "functions": [
            {"schema": "public", "name": "total", "kind": "f", "arguments": "integer", "result": "integer",
             "volatility": "s", "security_definer": false, "language": "sql", "body": "SELECT 1",
             "privileges": [{"grantee": "app", "privilege": "EXECUTE"}]}
        ]
    })
}

/// The base PostgreSQL catalog, then the catalog with `edit`.
pub(super) fn postgres(edit: Edit) -> Pair {
    use crate::core::normalize::postgres::normalize;
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    let old = normalize("acme.shop", &bytes(&postgres_catalog())).unwrap();
    let mut edited = postgres_catalog();
    edit(&mut edited);
    let new = normalize("acme.shop", &bytes(&edited)).unwrap();
    (old, new)
}

/// An OpenRPC method `transfer(from, to, memo?)`; `edit` changes its params.
pub(super) fn rpc_doc(edit: impl FnOnce(&mut Vec<Value>)) -> Value {
    let mut params = vec![
        json!({"name": "from", "required": true, "schema": {"type": "string"}}),
        json!({"name": "to", "required": true, "schema": {"type": "string"}}),
        json!({"name": "memo", "schema": {"type": "string"}}),
    ];
    edit(&mut params);
    json!({"openrpc": "1.2.6", "info": {"title": "t", "version": "1"},
           "methods": [{"name": "transfer", "params": params,
                        "result": {"name": "ok", "schema": {"type": "boolean"}}}]})
}

/// The base OpenRPC method, then the method with `edit` applied to its params.
pub(super) fn rpc(edit: RpcEdit) -> Pair {
    use crate::core::normalize::openrpc;
    let old = openrpc::normalize_value("acme.rpc", &rpc_doc(|_| {})).unwrap();
    let new = openrpc::normalize_value("acme.rpc", &rpc_doc(edit)).unwrap();
    (old, new)
}

/// Two GraphQL SDL documents (kind graphql).
pub(super) fn graphql(old: &str, new: &str) -> Pair {
    use crate::core::normalize::graphql::normalize;
    let o = normalize("acme.graph", old.as_bytes()).expect("old SDL normalizes");
    let n = normalize("acme.graph", new.as_bytes()).expect("new SDL normalizes");
    (o, n)
}

/// Two OData CSDL documents (kind odata).
pub(super) fn odata((old, new): (String, String)) -> Pair {
    use crate::core::normalize::odata::normalize;
    let o = normalize("acme.odata", old.as_bytes()).expect("old CSDL normalizes");
    let n = normalize("acme.odata", new.as_bytes()).expect("new CSDL normalizes");
    (o, n)
}

/// The base OpenRPC document with `old`, then with `new` (whole-document edits).
pub(super) fn rpc_docs(old: impl FnOnce(&mut Value), new: impl FnOnce(&mut Value)) -> Pair {
    use crate::core::normalize::openrpc;
    let (mut o, mut n) = (rpc_doc(|_| {}), rpc_doc(|_| {}));
    old(&mut o);
    new(&mut n);
    (
        openrpc::normalize_value("acme.rpc", &o).unwrap(),
        openrpc::normalize_value("acme.rpc", &n).unwrap(),
    )
}

/// One case of a rule: classifying `old` against `new` under `policy` must fire `rule`.
pub(super) struct Case {
    pub rule: &'static Rule,
    pub old: ToolSpec,
    pub new: ToolSpec,
    pub policy: ClassifyPolicy,
}

impl Case {
    pub fn new(rule: &'static Rule, (old, new): Pair) -> Case {
        Case {
            rule,
            old,
            new,
            policy: ClassifyPolicy::default(),
        }
    }

    pub fn with_policy(self, policy: ClassifyPolicy) -> Case {
        Case { policy, ..self }
    }
}

/// Classifies `old` against `new` and asserts that `rule` fired with its default severity,
/// that the report is at least that severe, and that nothing was left unexplained.
pub(super) fn check(rule: &'static Rule, old: &ToolSpec, new: &ToolSpec) -> DriftReport {
    check_with(rule, old, new, &ClassifyPolicy::default())
}

/// [`check`] under `policy` (the expected severity is the rule's under its overrides).
pub(super) fn check_with(
    rule: &'static Rule,
    old: &ToolSpec,
    new: &ToolSpec,
    policy: &ClassifyPolicy,
) -> DriftReport {
    assert!(
        ALL.iter().any(|r| std::ptr::eq(*r, rule)),
        "rule {} is not registered in rules::ALL",
        rule.id
    );
    let report = classify(old, new, policy);
    let Some(hit) = report.changes.iter().find(|c| c.rule == rule.id) else {
        panic!(
            "case {} did not fire it; got {:#?}",
            rule.id, report.changes
        );
    };
    let expected = rule.severity_under(&policy.severity);
    assert_eq!(hit.severity, expected, "case {}", rule.id);
    assert!(
        report.compatibility >= Compatibility::from_severity(expected),
        "case {}: report {:?} is milder than its change",
        report.compatibility,
        rule.id
    );
    if !std::ptr::eq(rule, &super::shared::UNCLASSIFIED_CHANGE) {
        assert!(
            !report
                .changes
                .iter()
                .any(|c| c.rule == super::shared::UNCLASSIFIED_CHANGE.id),
            "case {} left an unexplained difference: {:#?}",
            rule.id,
            report.changes
        );
    }
    if new.kind == Kind::Mcp {
        // Model-facing text is never judged by the general (info) text rules.
        let general = [
            &super::shared::DESCRIPTION_CHANGED,
            &super::shared::TITLE_CHANGED,
            &super::shared::DOCUMENTATION_CHANGED,
        ];
        assert!(
            !report
                .changes
                .iter()
                .any(|c| general.iter().any(|g| c.rule == g.id)),
            "{}: {:#?}",
            rule.id,
            report.changes
        );
    }
    report
}

/// [`check_with`] on a case.
pub(super) fn check_case(case: &Case) -> DriftReport {
    check_with(case.rule, &case.old, &case.new, &case.policy)
}

/// The report of the base document against the base document with `edit`.
pub(super) fn run_case(edit: Edit) -> DriftReport {
    let (old, new) = openapi(edit);
    classify(&old, &new, &ClassifyPolicy::default())
}

/// Every family's cases, from the one registration list (`rules::FAMILIES`).
fn all_cases() -> Vec<Case> {
    FAMILIES.iter().flat_map(|f| (f.cases)()).collect()
}

#[test]
fn every_rule_has_a_case() {
    let cases = all_cases();
    for rule in ALL.iter() {
        assert!(
            cases.iter().any(|c| std::ptr::eq(c.rule, *rule)),
            "rule {} has no test case",
            rule.id
        );
    }
}

#[test]
fn identical_documents_report_identical() {
    let a = normalize_value("acme.pets", &doc(|_| {})).unwrap();
    let report = classify(&a, &a.clone(), &ClassifyPolicy::default());
    assert_eq!(report.compatibility, Compatibility::Identical);
    assert!(report.changes.is_empty());
}

#[test]
fn unexplained_difference_is_breaking() {
    let a = normalize_value("acme.pets", &doc(|_| {})).unwrap();
    let mut b = a.clone();
    // A contract field no rule looks at (aliases are not produced by the OpenAPI normalizer).
    std::sync::Arc::make_mut(&mut b.endpoints[0])
        .aliases
        .push("legacyName".into());
    let report = classify(&a, &b, &ClassifyPolicy::default());
    assert_eq!(report.compatibility, Compatibility::Breaking);
    assert_eq!(report.changes.len(), 1);
    assert_eq!(report.changes[0].rule, "unclassified-change");
}

#[test]
fn a_change_in_a_shared_definition_is_reported_once_per_direction() {
    let report = run_case(|d| {
        at(d, PET)["properties"]
            .as_object_mut()
            .unwrap()
            .remove("tag");
    });
    let hits: Vec<_> = report
        .changes
        .iter()
        .filter(|c| c.path == "components.schemas.Pet.properties.tag")
        .collect();
    assert_eq!(hits.len(), 1, "{hits:#?}");
}

#[test]
fn severity_overrides_apply() {
    let mut overrides = SeverityOverrides::new();
    overrides.insert("request-property-removed".into(), Severity::Info);
    let old = normalize_value("acme.pets", &doc(|_| {})).unwrap();
    let new = normalize_value(
        "acme.pets",
        &doc(|d| {
            at(d, NEW_PET)["properties"]
                .as_object_mut()
                .unwrap()
                .remove("tag");
        }),
    )
    .unwrap();
    let policy = ClassifyPolicy {
        severity: overrides,
        classification: None,
        uses: None,
        ..Default::default()
    };
    let report = classify(&old, &new, &policy);
    assert_eq!(report.compatibility, Compatibility::Compatible);
    assert_eq!(report.changes[0].severity, Severity::Info);
}

#[test]
fn recursive_schemas_terminate() {
    let edit: Edit = |d| {
        at(d, PET)["properties"]["parent"] = json!({"$ref": "#/components/schemas/Pet"});
    };
    let old = normalize_value("acme.pets", &doc(edit)).unwrap();
    let new = normalize_value(
        "acme.pets",
        &doc(|d| {
            at(d, PET)["properties"]["parent"] = json!({"$ref": "#/components/schemas/Pet"});
            at(d, PET)["properties"]["name"]["maxLength"] = json!(10);
        }),
    )
    .unwrap();
    let report = classify(&old, &new, &ClassifyPolicy::default());
    assert!(report
        .changes
        .iter()
        .any(|c| c.rule == "response-constraint-tightened"));
}

#[test]
fn nullable_30_and_31_forms_are_not_drift() {
    let old = normalize_value(
        "acme.pets",
        &doc(|d| {
            at(d, PET)["properties"]["tag"] = json!({"type": "string", "nullable": true});
        }),
    )
    .unwrap();
    let new = normalize_value(
        "acme.pets",
        &doc(|d| {
            d["openapi"] = json!("3.1.0");
            at(d, PET)["properties"]["tag"] = json!({"type": ["string", "null"]});
        }),
    )
    .unwrap();
    assert_eq!(
        classify(&old, &new, &ClassifyPolicy::default()).compatibility,
        Compatibility::Identical
    );
}

#[test]
fn report_order_does_not_depend_on_input_order() {
    let edit: Edit = |d| {
        at(d, PET)["properties"]
            .as_object_mut()
            .unwrap()
            .remove("tag");
        at(d, LIST)["parameters"] = json!([]);
        at(d, "/paths")["/toys"] = json!({"get": {"responses": {"200": {"description": "ok"}}}});
    };
    let a = classify(
        &normalize_value("acme.pets", &doc(|_| {})).unwrap(),
        &normalize_value("acme.pets", &doc(edit)).unwrap(),
        &ClassifyPolicy::default(),
    );
    let mut sorted = a.changes.clone();
    sorted.sort();
    assert_eq!(a.changes, sorted);
}

#[test]
fn webhook_payloads_are_compared_in_the_receiving_direction() {
    let hook = |required: &[&str], extra: bool| {
        let mut props = json!({"id": {"type": "string"}});
        if extra {
            props["note"] = json!({"type": "string"});
        }
        json!({"post": {"operationId": "petCreated",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": required, "properties": props}}}},
            "responses": {"200": {"description": "ack"}}}})
    };
    let with = |hook_item: Value| {
        normalize_value(
            "acme.pets",
            &doc(move |d| {
                d["openapi"] = json!("3.1.0");
                d["webhooks"] = json!({"newPet": hook_item});
            }),
        )
        .unwrap()
    };
    let old = with(hook(&["id"], false));
    assert!(old
        .endpoints
        .iter()
        .any(|e| e.method == "WEBHOOK" && e.name == "petCreated"));
    // The provider now sends a new required field: the consumer just receives more.
    let grown = classify(
        &old,
        &with(hook(&["id", "note"], true)),
        &ClassifyPolicy::default(),
    );
    assert_eq!(
        grown.compatibility,
        Compatibility::Compatible,
        "{:#?}",
        grown.changes
    );
    // The provider stops sending a field the consumer may read: breaking.
    let mut shrunk_hook = hook(&[], false);
    shrunk_hook["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"] =
        json!({});
    let shrunk = classify(&old, &with(shrunk_hook), &ClassifyPolicy::default());
    assert!(
        shrunk
            .changes
            .iter()
            .any(|c| c.rule == "response-property-removed"),
        "{:#?}",
        shrunk.changes
    );
    // A new webhook is compatible (nothing the consumer calls); a removed one is breaking.
    let none = normalize_value("acme.pets", &doc(|d| d["openapi"] = json!("3.1.0"))).unwrap();
    assert_eq!(
        classify(&none, &old, &ClassifyPolicy::default()).compatibility,
        Compatibility::Compatible
    );
    assert_eq!(
        classify(&old, &none, &ClassifyPolicy::default()).compatibility,
        Compatibility::Breaking
    );
}

#[test]
fn callbacks_are_endpoints() {
    let spec = normalize_value("acme.pets", &doc(|d| {
        at(d, CREATE)["callbacks"] = json!({"onAdopted": {"{$request.body#/callbackUrl}": {"post": {
            "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {"204": {"description": "ok"}}}}}});
    }))
    .unwrap();
    let cb = spec
        .endpoints
        .iter()
        .find(|e| e.method == "CALLBACK")
        .expect("callback endpoint");
    assert_eq!(
        cb.path,
        "createPet.onAdopted {$request.body#/callbackUrl} POST"
    );
}

#[test]
fn a_changed_security_scheme_is_a_security_change() {
    let with_scheme = |scheme: Value| {
        normalize_value(
            "acme.pets",
            &doc(move |d| {
                d["security"] = json!([{"auth": []}]);
                d["components"]["securitySchemes"] = json!({"auth": scheme});
            }),
        )
        .unwrap()
    };
    let bearer = with_scheme(json!({"type": "http", "scheme": "bearer", "description": "a"}));
    let described = with_scheme(json!({"type": "http", "scheme": "bearer", "description": "b"}));
    let api_key = with_scheme(json!({"type": "apiKey", "in": "query", "name": "key"}));
    assert_eq!(
        classify(&bearer, &described, &ClassifyPolicy::default()).compatibility,
        Compatibility::Identical
    );
    let report = classify(&bearer, &api_key, &ClassifyPolicy::default());
    assert_eq!(report.compatibility, Compatibility::SecurityReview);
    assert!(report
        .changes
        .iter()
        .all(|c| c.rule == "security-requirements-changed"));
}

#[test]
fn extensible_enums_may_grow_but_not_shrink_on_the_request_side() {
    let with = |values: Value| {
        normalize_value(
            "acme.pets",
            &doc(move |d| {
                at(d, NEW_PET)["properties"]["kind"] =
                    json!({"type": "string", "x-extensible-enum": values});
            }),
        )
        .unwrap()
    };
    let base = with(json!(["cat", "dog"]));
    let grown = classify(
        &base,
        &with(json!(["cat", "dog", "fox"])),
        &ClassifyPolicy::default(),
    );
    assert_eq!(grown.compatibility, Compatibility::Compatible);
    let shrunk = classify(&base, &with(json!(["cat"])), &ClassifyPolicy::default());
    assert_eq!(shrunk.compatibility, Compatibility::Breaking);
    assert!(shrunk
        .changes
        .iter()
        .any(|c| c.rule == "request-enum-value-removed"));
}

/// Endpoint sub-kinds read the method text both ways; any other text (an HTTP method, an
/// OpenRPC call) is `Other` and stays the endpoint's own.
#[test]
fn endpoint_sub_kinds_read_their_method_text() {
    use crate::core::model::EndpointSubKind;
    for (sub, text) in EndpointSubKind::NAMED {
        assert_eq!(EndpointSubKind::of(text), *sub);
        assert_eq!(sub.as_str(), Some(*text));
    }
    for other in ["GET", "POST", "CALL", "QUERY", "prompt", ""] {
        assert_eq!(EndpointSubKind::of(other), EndpointSubKind::Other);
    }
    assert_eq!(EndpointSubKind::Other.as_str(), None);
    let (_, new) = mcp(|_| {});
    let subs: Vec<EndpointSubKind> = new.endpoints.iter().map(|e| e.sub_kind()).collect();
    assert!(subs.contains(&EndpointSubKind::Tool), "{subs:?}");
}

/// The pinned (rule, kind) pairs, `tests/fixtures/rule-kinds.txt`: the section `name` as
/// `(rule id, kind text)`.
pub(super) fn pinned_rule_kinds(name: &str) -> std::collections::BTreeSet<(String, String)> {
    let text = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rule-kinds.txt"
    ));
    let mut section = "";
    let mut out = std::collections::BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s;
            continue;
        }
        if section == name {
            let (rule, kind) = line.split_once(' ').expect("`rule kind`");
            out.insert((rule.to_string(), kind.to_string()));
        }
    }
    out
}

/// Every (rule, kind) pair the rule cases produce is pinned in `tests/fixtures/rule-kinds.txt`
/// (its `[cases]` section, exactly; `[corpus]` is pinned by `tests/kinds/corpus.rs`), and every
/// pinned pair names a registered rule and a known [`ChangeKind`]: a change of which kind a
/// rule emits is deliberate, never a side effect of a refactor.
///
/// [`ChangeKind`]: crate::core::change_kind::ChangeKind
#[test]
fn every_rule_kind_pair_of_the_cases_is_pinned() {
    use crate::core::change_kind::ChangeKind;
    let mut produced = std::collections::BTreeSet::new();
    for case in all_cases() {
        let report = classify(&case.old, &case.new, &case.policy);
        for c in report.changes {
            produced.insert((c.rule, c.kind.as_str().to_string()));
        }
    }
    let pinned = pinned_rule_kinds("cases");
    let listing: String = produced.iter().map(|(r, k)| format!("{r} {k}\n")).collect();
    assert!(
        produced == pinned,
        "the rule cases produce other (rule, kind) pairs than tests/fixtures/rule-kinds.txt \
         pins; its [cases] section would be:\n{listing}"
    );
    for (rule, kind) in pinned.iter().chain(pinned_rule_kinds("corpus").iter()) {
        assert!(ALL.iter().any(|r| r.id == rule), "{rule} is no rule");
        assert!(
            ChangeKind::ALL.iter().any(|k| k.as_str() == kind),
            "{kind} is no ChangeKind"
        );
    }
}

/// Deliberate asymmetries of the rules, each with its reason: a rule id (or an id prefix
/// ending in `-`) and why it has no request/response or added/removed counterpart.
const ASYMMETRIES: &[(&str, &str)] = &[
    (
        "request-body-",
        "only a caller sends a request body; what it receives is judged by response-*",
    ),
    (
        "request-parameter-",
        "only a caller sends parameters; response headers are response-header-*",
    ),
    (
        "request-encoding-changed",
        "multipart and form encodings describe only what a caller sends",
    ),
    (
        "response-header-",
        "response headers are only received; request headers are parameters",
    ),
    (
        "response-error-status-",
        "status codes are only received",
    ),
    (
        "response-success-status-",
        "status codes are only received",
    ),
    (
        "response-links-changed",
        "links are design-time hints of a response only",
    ),
    (
        "database-function-added-",
        "a dropped function is endpoint-removed, like any endpoint",
    ),
    (
        "database-object-added",
        "a dropped table or view is endpoint-removed, like any endpoint",
    ),
    (
        "database-object-added-with-grants",
        "a dropped table or view is endpoint-removed, like any endpoint",
    ),
    (
        "tool-added",
        "a removed tool is endpoint-removed (breaking); only a new tool brings new model-facing text",
    ),
    (
        "hidden-text-added",
        "hidden characters that disappear are no risk; the text change is reported by its text rule",
    ),
    (
        "directive-argument-relaxed",
        "its opposite (an argument made required) is directive-argument-changed, with type and default changes",
    ),
];

/// The counterpart words of the added/removed axis (and its kin), both ways.
const OPPOSITES: &[(&str, &str)] = &[
    ("-added", "-removed"),
    ("-tightened", "-relaxed"),
    ("-became-required", "-became-optional"),
    ("-granted", "-revoked"),
];

/// The symmetry meta-test (the way oasdiff's checker and buf's breaking rules pair their
/// checks): every schema rule judging one direction sits in a `schema::Directed` pair (so the
/// walker judges both directions), every `request-` rule has its `response-` counterpart and
/// back, and every added / tightened / became-required / granted rule has its opposite for
/// the same subject, unless [`ASYMMETRIES`] waives it with a reason. A waiver no rule needs
/// fails too.
#[test]
fn rules_are_symmetric_or_waived_with_a_reason() {
    use super::rule::Direction;
    use super::schema::DIRECTED;
    let registered = |r: &Rule| ALL.iter().any(|a| std::ptr::eq(*a, r));
    for d in DIRECTED {
        assert_eq!(
            d.request.direction(),
            Some(Direction::Request),
            "{}",
            d.request.id
        );
        assert_eq!(
            d.response.direction(),
            Some(Direction::Response),
            "{}",
            d.response.id
        );
        assert!(registered(d.request) && registered(d.response), "{d:?}");
    }
    let directed = |r: &Rule| {
        DIRECTED
            .iter()
            .any(|d| std::ptr::eq(d.request, r) || std::ptr::eq(d.response, r))
    };
    let mut used = std::collections::BTreeSet::new();
    let mut waived = |id: &str| {
        let hit = ASYMMETRIES.iter().find(|(w, _)| {
            if w.ends_with('-') {
                id.starts_with(w)
            } else {
                id == *w
            }
        });
        if let Some((w, _)) = hit {
            used.insert(*w);
        }
        hit.is_some()
    };
    let exists = |id: &str| ALL.iter().any(|r| r.id == id);
    let mut wrong = Vec::new();
    let schema = FAMILIES.iter().find(|f| f.name == "schema").unwrap();
    for r in schema.rules {
        if r.direction().is_some() && !directed(r) {
            wrong.push(format!(
                "schema rule {} is in no schema::Directed pair",
                r.id
            ));
        }
    }
    for r in ALL.iter() {
        let id = r.id;
        let named = if id.starts_with("request-") {
            Some(Direction::Request)
        } else if id.starts_with("response-") {
            Some(Direction::Response)
        } else {
            None
        };
        if let Some(dir) = named {
            if r.direction() != named {
                wrong.push(format!(
                    "{id} is named for {dir:?} but judges {:?}",
                    r.direction()
                ));
            }
            let mirror = dir.pick(
                id.replacen("request-", "response-", 1),
                id.replacen("response-", "request-", 1),
            );
            if !exists(&mirror) && !directed(r) && !waived(id) {
                wrong.push(format!("{id} has no {mirror}"));
            }
        }
        for (a, b) in OPPOSITES.iter().flat_map(|&(a, b)| [(a, b), (b, a)]) {
            let Some(at) = id.find(a) else { continue };
            let subject = &id[..at];
            let opposite = format!("{subject}{b}");
            let found = ALL.iter().any(|o| o.id.starts_with(&opposite));
            if !found && !waived(id) {
                wrong.push(format!("{id} has no {opposite}…"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "asymmetric rules (pair them, or waive them in ASYMMETRIES with a reason):\n{}",
        wrong.join("\n")
    );
    let stale: Vec<&str> = ASYMMETRIES
        .iter()
        .map(|(w, _)| *w)
        .filter(|w| !used.contains(w))
        .collect();
    assert!(stale.is_empty(), "waivers no rule needs: {stale:?}");
}
