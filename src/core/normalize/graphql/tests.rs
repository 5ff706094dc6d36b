use super::*;
use serde_json::json;

fn spec(sdl: &str) -> ToolSpec {
    normalize("t.g", sdl.as_bytes()).unwrap()
}

#[test]
fn roots_become_endpoints() {
    let s = spec(
        "schema { query: Q mutation: M }\n\"\"\"\n  The root\n\"\"\"\ntype Q { a(x: Int!, y: String = \"z\"): [Int!] @deprecated }\ntype M { b(i: In!): Int! }\ninput In { e: E! f: Int }\nenum E { X Y }",
    );
    let names: Vec<_> = s.endpoints.iter().map(|e| e.identity()).collect();
    assert_eq!(names, ["MUTATION Mutation.b", "QUERY Query.a"]);
    let a = &s.endpoints[1];
    assert!(a.read_only && a.idempotent && a.deprecated);
    assert_eq!(a.parameters[0].name, "x");
    assert!(a.parameters[0].required);
    assert!(!a.parameters[1].required);
    assert_eq!(
        a.parameters[1].schema,
        json!({"type": "string", "default": "z"})
    );
    assert_eq!(
        a.output_schema.as_deref(),
        Some(
            &json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}})
        )
    );
    let b = &s.endpoints[0];
    assert!(!b.read_only && b.destructive);
    assert_eq!(
        b.parameters[0].schema,
        json!({"allOf": [{"$ref": "#/types/In"}]})
    );
    assert_eq!(
        s.definitions["#/types/In"],
        json!({"type": "object", "x-graphql-kind": "input", "required": ["e"],
               "properties": {"e": {"allOf": [{"$ref": "#/types/E"}]}, "f": {"type": "integer"}}})
    );
}

use crate::core::diff::classify;
use crate::core::model::{Compatibility, DriftReport};

fn diff(old: &str, new: &str) -> DriftReport {
    classify(&spec(old), &spec(new), &Default::default())
}

fn rules(r: &DriftReport) -> Vec<(String, String)> {
    r.changes
        .iter()
        .map(|c| (c.rule.clone(), c.path.clone()))
        .collect()
}

const BASE: &str = "type Query { user(id: ID!): User  search(f: Filter): [User!]! }
type User { name: String!  role: Role  posts(first: Int): [Post] }
type Post { title: String }
input Filter { role: Role  kind: Kind }
enum Role { ADMIN USER }
enum Kind { A B }";

#[test]
fn identical_schemas_in_any_order_are_identical() {
    let reordered = "enum Kind { B A }\nschema { query: Query }\ntype Query { search(f: Filter): [User!]!  user(id: ID!): User }
type Post { title: String }
enum Role { USER ADMIN }
input Filter { kind: Kind  role: Role }
type User { posts(first: Int): [Post]  role: Role  name: String! }";
    assert_eq!(
        diff(BASE, reordered).compatibility,
        Compatibility::Identical
    );
}

#[test]
fn enum_values_are_judged_by_the_direction_they_are_used_in() {
    // Kind is only sent (Filter): a new value is compatible.
    let r = diff(
        BASE,
        &BASE.replace("enum Kind { A B }", "enum Kind { A B C }"),
    );
    assert_eq!(
        r.compatibility,
        Compatibility::Compatible,
        "{:?}",
        rules(&r)
    );
    assert!(rules(&r).contains(&("request-enum-value-added".into(), "types.Kind.enum".into())));
    // Role is sent and received: a new value is breaking on the response side.
    let r = diff(
        BASE,
        &BASE.replace("enum Role { ADMIN USER }", "enum Role { ADMIN USER GUEST }"),
    );
    assert_eq!(r.compatibility, Compatibility::Breaking);
    let got = rules(&r);
    assert!(
        got.contains(&("response-enum-value-added".into(), "types.Role.enum".into())),
        "{got:?}"
    );
    assert!(
        got.contains(&("request-enum-value-added".into(), "types.Role.enum".into())),
        "{got:?}"
    );
}

#[test]
fn nested_field_arguments_are_request_side() {
    let r = diff(
        BASE,
        &BASE.replace("posts(first: Int)", "posts(first: Int, after: String)"),
    );
    assert_eq!(
        r.compatibility,
        Compatibility::Compatible,
        "{:?}",
        rules(&r)
    );
    assert_eq!(
        rules(&r),
        [(
            "request-property-added-optional".to_string(),
            "types.User.properties.posts.arguments.properties.after".to_string()
        )]
    );
    let r = diff(
        BASE,
        &BASE.replace("posts(first: Int)", "posts(first: Int, after: String!)"),
    );
    assert_eq!(r.compatibility, Compatibility::Breaking);
    let r = diff(BASE, &BASE.replace("posts(first: Int)", "posts"));
    assert!(rules(&r).contains(&(
        "request-property-removed".into(),
        "types.User.properties.posts.arguments.properties.first".into()
    )));
    // A default becoming different changes what callers that omit it get.
    let r = diff(
        BASE,
        &BASE.replace("posts(first: Int)", "posts(first: Int = 10)"),
    );
    assert_eq!(r.compatibility, Compatibility::Breaking, "{:?}", rules(&r));
}

#[test]
fn nullability_follows_direction() {
    // Output nullable → non-null: a new guarantee.
    let r = diff(BASE, &BASE.replace("title: String }", "title: String! }"));
    assert_eq!(
        r.compatibility,
        Compatibility::Compatible,
        "{:?}",
        rules(&r)
    );
    // Output non-null → nullable: breaking.
    let r = diff(BASE, &BASE.replace("name: String!", "name: String"));
    assert_eq!(
        rules(&r),
        [(
            "response-property-became-optional".to_string(),
            "types.User.properties.name.required".to_string()
        )]
    );
    // Root argument non-null → nullable: compatible; nullable → non-null: breaking.
    let r = diff(BASE, &BASE.replace("user(id: ID!)", "user(id: ID)"));
    assert_eq!(
        r.compatibility,
        Compatibility::Compatible,
        "{:?}",
        rules(&r)
    );
    let r = diff(
        BASE,
        &BASE.replace("search(f: Filter)", "search(f: Filter!)"),
    );
    assert_eq!(r.compatibility, Compatibility::Breaking);
    // List items: [Post] → [Post!] narrows a response, fine (issue 30: the item is judged as
    // Post plus null, not as a composition change); [Post!] → [Post] widens it.
    let r = diff(BASE, &BASE.replace("[Post]", "[Post!]"));
    assert_eq!(
        r.compatibility,
        Compatibility::Compatible,
        "{:?}",
        rules(&r)
    );
    assert!(
        rules(&r)
            .iter()
            .all(|(rule, _)| rule == "response-type-narrowed"),
        "{:?}",
        rules(&r)
    );
    let r = diff(&BASE.replace("[Post]", "[Post!]"), BASE);
    assert_eq!(r.compatibility, Compatibility::Breaking, "{:?}", rules(&r));
    assert!(
        rules(&r)
            .iter()
            .all(|(rule, _)| rule == "response-type-changed"),
        "{:?}",
        rules(&r)
    );
}

#[test]
fn fields_types_and_roots() {
    let r = diff(BASE, &BASE.replace("role: Role  posts", "posts"));
    assert_eq!(
        rules(&r),
        [(
            "response-property-removed".to_string(),
            "types.User.properties.role".to_string()
        )]
    );
    let r = diff(
        BASE,
        &BASE.replace(
            "search(f: Filter): [User!]! }",
            "search(f: Filter): [User!]!  me: User }",
        ),
    );
    assert_eq!(r.compatibility, Compatibility::Compatible);
    let r = diff(
        BASE,
        &format!("{BASE}\ntype Mutation {{ ban(id: ID!): Boolean }}"),
    );
    assert_eq!(r.compatibility, Compatibility::SecurityReview);
    // The same field moving from Query to Mutation gains side effects.
    let moved = "type Query { search(f: Filter): [User!]! }\ntype Mutation { user(id: ID!): User }
type User { name: String!  role: Role  posts(first: Int): [Post] }
type Post { title: String }
input Filter { role: Role  kind: Kind }
enum Role { ADMIN USER }
enum Kind { A B }";
    let r = diff(BASE, moved);
    assert!(
        rules(&r).contains(&("method-escalated".into(), "endpoints.user.method".into())),
        "{:?}",
        rules(&r)
    );
}

#[test]
fn deprecation_and_descriptions_are_info() {
    let r = diff(
        BASE,
        &BASE.replace(
            "title: String",
            "\"The title\" title: String @deprecated(reason: \"use name\")",
        ),
    );
    assert_eq!(
        r.compatibility,
        Compatibility::Compatible,
        "{:?}",
        rules(&r)
    );
    assert!(r
        .changes
        .iter()
        .all(|c| c.severity == crate::core::model::Severity::Info));
    let r = diff(
        BASE,
        &BASE.replace("user(id: ID!): User", "user(id: ID!): User @deprecated"),
    );
    assert_eq!(
        rules(&r),
        [(
            "deprecated-changed".to_string(),
            "endpoints.user.deprecated".to_string()
        )]
    );
}

#[test]
fn unions_and_interfaces() {
    let u = "type Query { s: R  n: Node }\nunion R = A | B\ninterface Node { id: ID! }\ntype A implements Node { id: ID! }\ntype B { x: Int }\ntype C implements Node { id: ID! }";
    let s = spec(u);
    assert_eq!(
        s.definitions["#/types/R"]["oneOf"],
        json!([{"$ref": "#/types/A"}, {"$ref": "#/types/B"}])
    );
    assert_eq!(
        s.definitions["#/types/Node"]["anyOf"],
        json!([{"$ref": "#/types/A"}, {"$ref": "#/types/C"}])
    );
    let r = diff(u, &u.replace("A | B", "A | B | C"));
    assert_eq!(
        rules(&r),
        [(
            "schema-composition-changed".to_string(),
            "types.R.oneOf".to_string()
        )]
    );
    // Members are paired by name: a new member does not hide a change in another one that
    // is reachable only through the union.
    let r = diff(
        u,
        &u.replace("A | B", "A | B | C")
            .replace("type B { x: Int }", "type B { y: Int }"),
    );
    let got = rules(&r);
    assert!(
        got.contains(&(
            "response-property-removed".into(),
            "types.B.properties.x".into()
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&("schema-composition-changed".into(), "types.R.oneOf".into())),
        "{got:?}"
    );
    // Same for an interface losing one implementation while another changes.
    let r = diff(
        u,
        &u.replace(
            "type C implements Node { id: ID! }",
            "type C implements Node { id: ID! z: Int }",
        )
        .replace("type A implements Node", "type A"),
    );
    let got = rules(&r);
    assert!(
        got.contains(&(
            "response-property-added".into(),
            "types.C.properties.z".into()
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "schema-composition-changed".into(),
            "types.Node.anyOf".into()
        )),
        "{got:?}"
    );
}

#[test]
fn a_renamed_root_type_is_breaking() {
    let renamed = format!(
        "schema {{ query: Root }}\n{}",
        BASE.replace("type Query", "type Root")
    );
    let r = diff(BASE, &renamed);
    assert_eq!(r.compatibility, Compatibility::Breaking);
    assert_eq!(
        rules(&r),
        vec![("root-type-renamed".into(), "roots.query".into())]
    );
}

#[test]
fn extend_schema_with_directives_only_keeps_the_default_roots() {
    let s = spec("type Query { a: Int }\nextend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\")");
    assert_eq!(s.endpoints.len(), 1);
    assert_eq!(s.endpoints[0].method, "QUERY");
    assert!(s.extensions.contains_key("schema.directives"));
}

#[test]
fn an_sdl_without_a_query_root_has_one_type_endpoint_per_named_type() {
    let s = spec("type User @key(fields: \"id\") { id: ID! }\ninput UserInput { id: ID! }\nscalar Url\ntype Mutation { a: Int }");
    let ids: Vec<String> = s.endpoints.iter().map(|e| e.identity()).collect();
    assert_eq!(
        ids,
        vec!["TYPE Mutation", "TYPE Url", "TYPE User", "TYPE UserInput"]
    );
    let input = s.endpoints.iter().find(|e| e.name == "UserInput").unwrap();
    assert!(input.input_schema.is_some() && input.output_schema.is_none());
}

#[test]
fn invalid_and_hostile_sdl_is_an_error() {
    for bad in [
        "type Query { a: Missing }",
        "type Query { a: In }\ninput In { x: Int }",
        "type Query { a(x: Out): Int }\ntype Out { x: Int }",
        "type Query { a: Int }\ntype Query { b: Int }",
        "type Query { a: Int",
        "query { a }",
        "type Query { a(x: Int = $v): Int }",
    ] {
        assert!(normalize("t.g", bad.as_bytes()).is_err(), "{bad}");
    }
    let deep = format!(
        "type Query {{ a: {}Int{} }}",
        "[".repeat(500),
        "]".repeat(500)
    );
    let err = normalize("t.g", deep.as_bytes()).unwrap_err().to_string();
    assert!(err.contains("limit"), "{err}");
    let many = format!("type Query {{ {} }}", "a: Int ".repeat(100));
    let err = normalize_sdl_with_limits("t.g", &many, 64, 100)
        .unwrap_err()
        .to_string();
    assert!(err.contains("token limit"), "{err}");
}

#[test]
fn introspection_defaults_and_wrappers_match_sdl() {
    let sdl = "type Query { a(o: Order = {field: NAME, dir: ASC}, n: [Int!] = [1, 2]): [[String]!] }\ninput Order { field: F!  dir: D = DESC }\nenum F { NAME }\nenum D { ASC DESC }";
    let t = |kind: &str, name: Option<&str>, of: Value| json!({"kind": kind, "name": name, "ofType": of});
    let named = |kind: &str, name: &str| t(kind, Some(name), Value::Null);
    let intro = json!({"data": {"__schema": {
    "queryType": {"name": "Query"}, "mutationType": null, "subscriptionType": null,
    "types": [
        {"kind": "OBJECT", "name": "Query", "description": null, "interfaces": [], "fields": [
            {"name": "a", "description": null, "isDeprecated": false, "deprecationReason": null,
             "type": t("LIST", None, t("NON_NULL", None, t("LIST", None, named("SCALAR", "String")))),
             "args": [
                {"name": "o", "description": null, "type": named("INPUT_OBJECT", "Order"), "defaultValue": "{field: NAME, dir: ASC}"},
                {"name": "n", "description": null, "type": t("LIST", None, t("NON_NULL", None, named("SCALAR", "Int"))), "defaultValue": "[1,2]"}
             ]}]},
        {"kind": "INPUT_OBJECT", "name": "Order", "description": null, "inputFields": [
            {"name": "field", "description": null, "type": t("NON_NULL", None, named("ENUM", "F")), "defaultValue": null},
            {"name": "dir", "description": null, "type": named("ENUM", "D"), "defaultValue": "DESC"}]},
        {"kind": "ENUM", "name": "F", "description": null, "enumValues": [{"name": "NAME", "description": null, "isDeprecated": false, "deprecationReason": null}]},
        {"kind": "ENUM", "name": "D", "description": null, "enumValues": [
            {"name": "ASC", "description": null, "isDeprecated": false, "deprecationReason": null},
            {"name": "DESC", "description": null, "isDeprecated": false, "deprecationReason": null}]},
        {"kind": "SCALAR", "name": "String", "description": null},
        {"kind": "SCALAR", "name": "Int", "description": null},
        {"kind": "OBJECT", "name": "__Schema", "description": null, "fields": []}
    ]}}});
    assert_eq!(
        spec(sdl),
        normalize("t.g", intro.to_string().as_bytes()).unwrap()
    );
    let out = &spec(sdl).endpoints[0].output_schema;
    assert_eq!(
        out.as_ref().unwrap()["properties"]["a"],
        json!({"type": "array", "items": {"type": "array", "items": {"type": ["null", "string"]}}})
    );
    for bad in [
        json!({"errors": [{"message": "no"}]}),
        json!({"data": {"__schema": {"types": "none"}}}),
        json!({"data": {"__schema": {"queryType": {"name": "Query"}, "types": [{"kind": "WAT", "name": "Query"}]}}}),
    ] {
        assert!(
            normalize("t.g", bad.to_string().as_bytes()).is_err(),
            "{bad}"
        );
    }
    assert!(normalize("t.g", b"{\"data\": {\"__schema\": ").is_err());
}

#[test]
fn subscriptions_are_read_only_endpoints() {
    let s = spec("type Query { a: Int }\ntype Subscription { ticks(every: Int = 1): Int! }");
    let t = s
        .endpoints
        .iter()
        .find(|e| e.method == "SUBSCRIPTION")
        .unwrap();
    assert_eq!(t.identity(), "SUBSCRIPTION Subscription.ticks");
    assert!(t.read_only && !t.destructive);
    assert_eq!(
        t.parameters[0].schema,
        json!({"type": "integer", "default": 1})
    );
    assert!(!t.parameters[0].required);
}
