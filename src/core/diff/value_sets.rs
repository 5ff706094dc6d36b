//! Issue 30: verdicts judged by the values a schema allows, on each side a schema is on —
//! request (what callers send), response (what they receive) and shared (a definition on
//! both sides) — for every kind that has the class.

use super::classify;
use super::tests::{graphql, odata, Pair};
use crate::core::model::Compatibility::{self, *};

/// The report's compatibility and its changes as `rule path` lines.
fn verdict((old, new): &Pair) -> (Compatibility, Vec<String>) {
    let report = classify(old, new, &Default::default());
    let lines = report
        .changes
        .iter()
        .map(|c| format!("{} {}", c.rule, c.path))
        .collect();
    (report.compatibility, lines)
}

/// Asserts the verdict and that every change is one of `rules`.
fn expect(what: &str, pair: &Pair, want: Compatibility, rules: &[&str]) {
    let (got, lines) = verdict(pair);
    assert_eq!(got, want, "{what}: {lines:#?}");
    assert!(!lines.is_empty() || want == Identical, "{what}: no change");
    for line in &lines {
        let rule = line.split(' ').next().unwrap_or_default();
        assert!(
            rules.contains(&rule),
            "{what}: unexpected {line}; all: {lines:#?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// OData

/// A CSDL document with `request` as an action parameter's type facets (sent), `response` as a
/// function result's property (received) and `shared` on an entity type that is created and
/// read.
fn csdl(request: &str, response: &str, shared: &str) -> String {
    format!(
        r#"<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
<edmx:DataServices><Schema Namespace="d" xmlns="http://docs.oasis-open.org/odata/ns/edm">
<EntityType Name="Order"><Key><PropertyRef Name="Id"/></Key>
  <Property Name="Id" Type="Edm.Int32" Nullable="false"/>
  <Property Name="Value" {shared}/>
</EntityType>
<ComplexType Name="Quote"><Property Name="Value" {response}/></ComplexType>
<Action Name="Pay"><Parameter Name="value" {request}/></Action>
<Function Name="Price"><ReturnType Type="d.Quote"/></Function>
<EntityContainer Name="C">
  <EntitySet Name="Orders" EntityType="d.Order"/>
  <ActionImport Name="Pay" Action="d.Pay"/>
  <FunctionImport Name="Price" Function="d.Price"/>
</EntityContainer>
</Schema></edmx:DataServices></edmx:Edmx>"#
    )
}

/// One OData facet edit on each side: `(side, pair)` for request, response, shared.
fn odata_sides(old: &str, new: &str) -> Vec<(&'static str, Pair)> {
    let base = r#"Type="Edm.Int32""#;
    vec![
        (
            "request",
            odata((csdl(old, base, base), csdl(new, base, base))),
        ),
        (
            "response",
            odata((csdl(base, old, base), csdl(base, new, base))),
        ),
        (
            "shared",
            odata((csdl(base, base, old), csdl(base, base, new))),
        ),
    ]
}

#[test]
fn odata_scale_at_the_same_precision_is_breaking_on_every_side() {
    let d = |p: u32, s: u32| format!(r#"Type="Edm.Decimal" Precision="{p}" Scale="{s}""#);
    for (old, new) in [(d(10, 2), d(10, 3)), (d(10, 3), d(10, 2))] {
        for (side, pair) in odata_sides(&old, &new) {
            expect(
                &format!("{side}: {old} -> {new}"),
                &pair,
                Breaking,
                &["facet-changed"],
            );
        }
    }
    // More integer digits and more scale: wider, judged by direction.
    let (old, new) = (d(10, 2), d(12, 3));
    for (side, pair) in odata_sides(&old, &new) {
        let (want, rules): (_, &[&str]) = match side {
            "request" => (Compatible, &["request-facet-relaxed"]),
            "response" => (Breaking, &["response-facet-relaxed"]),
            _ => (
                Breaking,
                &["request-facet-relaxed", "response-facet-relaxed"],
            ),
        };
        expect(&format!("{side}: {old} -> {new}"), &pair, want, rules);
    }
    let (old, new) = (d(10, 2), d(9, 1));
    for (side, pair) in odata_sides(&old, &new) {
        let (want, rules): (_, &[&str]) = match side {
            "request" => (Breaking, &["request-facet-tightened"]),
            "response" => (Compatible, &["response-facet-tightened"]),
            _ => (
                Breaking,
                &["request-facet-tightened", "response-facet-tightened"],
            ),
        };
        expect(&format!("{side}: {old} -> {new}"), &pair, want, rules);
    }
}

// ---------------------------------------------------------------------------------------------
// GraphQL: named types are nominal on what callers send

/// A schema whose `request` type is an argument's (sent), `input` an input field's (sent
/// inside an argument) and `response` an output field's (received).
fn sdl(request: &str, input: &str, response: &str) -> String {
    format!(
        "type Query {{ find(key: {request}, filter: Filter): Item }}\n\
         input Filter {{ key: {input} }}\n\
         input Other {{ key: {input} }}\n\
         type Item {{ key: {response} }}\n\
         type Alt {{ key: {response} }}\n\
         scalar Money"
    )
}

fn graphql_sides(old: &str, new: &str) -> Vec<(&'static str, Pair)> {
    let base = "Boolean";
    vec![
        (
            "argument",
            graphql(&sdl(old, base, base), &sdl(new, base, base)),
        ),
        (
            "input field",
            graphql(&sdl(base, old, base), &sdl(base, new, base)),
        ),
        (
            "output field",
            graphql(&sdl(base, base, old), &sdl(base, base, new)),
        ),
    ]
}

#[test]
fn graphql_named_type_changes_of_inputs_are_breaking_and_only_wrappers_go_by_direction() {
    // Wider by value, narrower by value, a custom scalar, another input object: an input's
    // named type changed is breaking; an output's follows the value set.
    for (old, new, output) in [
        ("Int", "Float", (Breaking, "response-type-changed")),
        ("ID!", "String!", (Breaking, "response-constraint-relaxed")),
        ("[Int!]", "[Float!]", (Breaking, "response-type-changed")),
        ("Int", "Money", (Breaking, "response-type-changed")),
    ] {
        for (side, pair) in graphql_sides(old, new) {
            let what = format!("{side}: {old} -> {new}");
            if side == "output field" {
                let (want, rule) = output;
                let (got, lines) = verdict(&pair);
                assert_eq!(got, want, "{what}: {lines:#?}");
                assert!(
                    lines.iter().any(|l| l.starts_with(rule)),
                    "{what}: {lines:#?}"
                );
            } else {
                expect(&what, &pair, Breaking, &["input-named-type-changed"]);
            }
        }
    }
    // Another input object with the same fields is another type too.
    let pair = graphql(
        &sdl("Boolean", "Boolean", "Boolean"),
        &sdl("Boolean", "Boolean", "Boolean").replace("filter: Filter", "filter: Other"),
    );
    expect(
        "argument: Filter -> Other",
        &pair,
        Breaking,
        &["input-named-type-changed"],
    );
    // Wrappers keep their direction: an argument made optional is compatible, an output
    // field made non-null is compatible, a list item of an argument made nullable too.
    for (old, new, side, want) in [
        ("Int!", "Int", "argument", Compatible),
        ("Int!", "Int", "input field", Compatible),
        ("Int", "Int!", "output field", Compatible),
        ("Int", "Int!", "argument", Breaking),
        ("Int!", "Int", "output field", Breaking),
    ] {
        let pair = graphql_sides(old, new)
            .into_iter()
            .find(|(s, _)| *s == side)
            .map(|(_, p)| p)
            .unwrap_or_else(|| unreachable!());
        let (got, lines) = verdict(&pair);
        assert_eq!(got, want, "{side}: {old} -> {new}: {lines:#?}");
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with("input-named-type-changed")),
            "{side}: {old} -> {new}: {lines:#?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// JSON Schema kinds: OpenAPI (request body, response, a definition used by both), MCP (a
// tool's inputSchema, outputSchema), OpenRPC (a param, the result)

use serde_json::{json, Value};

/// An OpenAPI document whose request body property `v` is `request`, whose response property
/// `v` is `response`, and whose `Shared` definition (sent and received) is `shared`.
fn oas(version: &str, request: &Value, response: &Value, shared: &Value) -> Value {
    json!({
        "openapi": version,
        "info": {"title": "t", "version": "1"},
        "paths": {"/x": {"post": {
            "operationId": "x",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "properties": {
                    "v": request, "s": {"$ref": "#/components/schemas/Shared"}}}}}},
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "object", "properties": {
                    "v": response, "s": {"$ref": "#/components/schemas/Shared"}}}}}}}
        }}},
        "components": {"schemas": {"Shared": {"type": "object", "properties": {"v": shared}}}}
    })
}

/// A tool whose input property `v` is `input` and output property `v` is `output`.
fn tool(input: &Value, output: &Value) -> Value {
    json!({"tools": [{"name": "t",
        "inputSchema": {"type": "object", "properties": {"v": input}},
        "outputSchema": {"type": "object", "properties": {"v": output}}}]})
}

/// An OpenRPC method whose param `v` is `param` and result is `result`.
fn method(param: &Value, result: &Value) -> Value {
    json!({"openrpc": "1.2.6", "info": {"title": "t", "version": "1"},
           "methods": [{"name": "m", "params": [{"name": "v", "schema": param}],
                        "result": {"name": "r", "schema": result}}]})
}

/// One edit of a value schema on every side of every JSON Schema kind:
/// `(kind and side, direction the value travels ("request", "response" or "shared"), pair)`.
fn json_sides(version: &str, old: &Value, new: &Value) -> Vec<(String, &'static str, Pair)> {
    use crate::core::normalize::{mcp, openapi, openrpc};
    let base = json!({"type": "boolean"});
    let o = |d: Value| openapi::normalize_value("t.t", &d).expect("OpenAPI normalizes");
    let m = |d: Value| mcp::normalize_value("t.t", &d).expect("MCP normalizes");
    let r = |d: Value| openrpc::normalize_value("t.t", &d).expect("OpenRPC normalizes");
    vec![
        (
            format!("openapi {version} request body"),
            "request",
            (
                o(oas(version, old, &base, &base)),
                o(oas(version, new, &base, &base)),
            ),
        ),
        (
            format!("openapi {version} response"),
            "response",
            (
                o(oas(version, &base, old, &base)),
                o(oas(version, &base, new, &base)),
            ),
        ),
        (
            format!("openapi {version} shared definition"),
            "shared",
            (
                o(oas(version, &base, &base, old)),
                o(oas(version, &base, &base, new)),
            ),
        ),
        (
            "mcp inputSchema".into(),
            "request",
            (m(tool(old, &base)), m(tool(new, &base))),
        ),
        (
            "mcp outputSchema".into(),
            "response",
            (m(tool(&base, old)), m(tool(&base, new))),
        ),
        (
            "openrpc param".into(),
            "request",
            (r(method(old, &base)), r(method(new, &base))),
        ),
        (
            "openrpc result".into(),
            "response",
            (r(method(&base, old)), r(method(&base, new))),
        ),
    ]
}

/// Runs `json_sides` and checks each side's verdict: `want` gives (request, response) and the
/// shared side is the worse of the two.
fn check_json(
    version: &str,
    old: Value,
    new: Value,
    request: Compatibility,
    response: Compatibility,
) {
    for (what, side, pair) in json_sides(version, &old, &new) {
        let want = match side {
            "request" => request,
            "response" => response,
            _ => request.max(response),
        };
        let (got, lines) = verdict(&pair);
        assert_eq!(got, want, "{what}: {old} -> {new}: {lines:#?}");
    }
}

#[test]
fn bounds_are_judged_as_the_effective_interval() {
    let int = |extra: Value| {
        let mut s = json!({"type": "integer"});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s
    };
    let num = |extra: Value| {
        let mut s = json!({"type": "number"});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s
    };
    // The same interval spelled otherwise: info everywhere (3.1 numeric form).
    for (old, new) in [
        (
            int(json!({"maximum": 9})),
            int(json!({"exclusiveMaximum": 10})),
        ),
        (
            int(json!({"minimum": 1})),
            int(json!({"exclusiveMinimum": 0})),
        ),
        (
            int(json!({"maximum": 9, "exclusiveMaximum": 12})),
            int(json!({"maximum": 9})),
        ),
    ] {
        check_json("3.1.0", old, new, Compatible, Compatible);
    }
    // A wider interval in a new spelling: relaxed (compatible to send, breaking to receive).
    for (old, new) in [
        (
            int(json!({"maximum": 9})),
            int(json!({"exclusiveMaximum": 12})),
        ),
        (
            num(json!({"exclusiveMaximum": 10})),
            num(json!({"maximum": 10})),
        ),
        (
            num(json!({"exclusiveMinimum": 0})),
            num(json!({"minimum": 0})),
        ),
    ] {
        check_json("3.1.0", old, new, Compatible, Breaking);
    }
    // Narrower: tightened.
    for (old, new) in [
        (
            num(json!({"maximum": 10})),
            num(json!({"exclusiveMaximum": 10})),
        ),
        (
            int(json!({"maximum": 10})),
            int(json!({"exclusiveMaximum": 10})),
        ),
    ] {
        check_json("3.1.0", old, new, Breaking, Compatible);
    }
    // OpenAPI 3.0's boolean form.
    check_json(
        "3.0.3",
        int(json!({"maximum": 9})),
        int(json!({"maximum": 10, "exclusiveMaximum": true})),
        Compatible,
        Compatible,
    );
    check_json(
        "3.0.3",
        num(json!({"maximum": 10, "exclusiveMaximum": true})),
        num(json!({"maximum": 10})),
        Compatible,
        Breaking,
    );
    // multipleOf: a divisor accepts more, a multiple fewer.
    check_json(
        "3.1.0",
        num(json!({"multipleOf": 10})),
        num(json!({"multipleOf": 5})),
        Compatible,
        Breaking,
    );
    check_json(
        "3.1.0",
        num(json!({"multipleOf": 5})),
        num(json!({"multipleOf": 10})),
        Breaking,
        Compatible,
    );
}

#[test]
fn integer_and_float_widths_are_ordered() {
    let f = |t: &str, format: &str| json!({"type": t, "format": format});
    for (t, narrow, wide) in [
        ("integer", "int32", "int64"),
        ("integer", "int16", "int32"),
        ("number", "float", "double"),
    ] {
        check_json("3.1.0", f(t, narrow), f(t, wide), Compatible, Breaking);
        check_json("3.1.0", f(t, wide), f(t, narrow), Breaking, Compatible);
    }
    // Unordered formats stay breaking both ways.
    check_json(
        "3.1.0",
        f("integer", "int64"),
        f("integer", "unix-time"),
        Breaking,
        Breaking,
    );
}

#[test]
fn any_of_t_and_null_is_t_plus_null() {
    let optional = |t: Value| json!({"anyOf": [t, {"type": "null"}], "title": "V"});
    // Optional[str] as pydantic writes it: nullable is wider.
    check_json(
        "3.1.0",
        json!({"type": "string", "maxLength": 5, "title": "V"}),
        optional(json!({"type": "string", "maxLength": 5})),
        Compatible,
        Breaking,
    );
    check_json(
        "3.1.0",
        optional(json!({"type": "string"})),
        json!({"type": "string", "title": "V"}),
        Breaking,
        Compatible,
    );
    // The branch inside is still compared: a tighter T under the same null.
    // The siblings of the anyOf (title here) belong to T.
    check_json(
        "3.1.0",
        optional(json!({"type": "string", "maxLength": 9})),
        optional(json!({"type": "string", "maxLength": 5})),
        Breaking,
        Compatible,
    );
    // oneOf [null, T] where T excludes null is the same set as anyOf (oasdiff's
    // nullable_wrap); when T admits null too, no value matches exactly one branch for null.
    check_json(
        "3.1.0",
        json!({"type": "string"}),
        json!({"oneOf": [{"type": "null"}, {"type": "string"}]}),
        Compatible,
        Breaking,
    );
    check_json(
        "3.1.0",
        json!({"type": ["null", "string"]}),
        json!({"oneOf": [{"type": "null"}, {"type": ["null", "string"]}]}),
        Breaking,
        Breaking,
    );
    // The same values spelled otherwise: info.
    check_json(
        "3.1.0",
        json!({"type": ["null", "string"]}),
        json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
        Compatible,
        Compatible,
    );
}

#[test]
fn read_only_and_write_only_values_are_not_judged_where_they_never_travel() {
    // readOnly: a tighter constraint, a narrower type, an enum value removed are never sent.
    for (old, new) in [
        (
            json!({"type": "string", "readOnly": true, "maxLength": 9}),
            json!({"type": "string", "readOnly": true, "maxLength": 5}),
        ),
        (
            json!({"type": "string", "readOnly": true, "enum": ["a", "b"]}),
            json!({"type": "string", "readOnly": true, "enum": ["a"]}),
        ),
        (
            json!({"type": "number", "readOnly": true}),
            json!({"type": "integer", "readOnly": true}),
        ),
    ] {
        check_json("3.1.0", old, new, Compatible, Compatible);
    }
    // writeOnly: a looser constraint, an added enum value are never received.
    for (old, new) in [
        (
            json!({"type": "string", "writeOnly": true, "maxLength": 5}),
            json!({"type": "string", "writeOnly": true, "maxLength": 9}),
        ),
        (
            json!({"type": "string", "writeOnly": true, "enum": ["a"]}),
            json!({"type": "string", "writeOnly": true, "enum": ["a", "b"]}),
        ),
    ] {
        check_json("3.1.0", old, new, Compatible, Compatible);
    }
    // Without the flag the same edits are judged by direction.
    check_json(
        "3.1.0",
        json!({"type": "string", "maxLength": 9}),
        json!({"type": "string", "maxLength": 5}),
        Breaking,
        Compatible,
    );
}

#[test]
fn graphql_list_item_nullability_goes_by_direction_without_reshaping_the_item_type() {
    // Item type a scalar and an object/input type.
    let schema = |arg: &str, out: &str| {
        format!(
            "type Query {{ find(keys: {arg}, filters: [Filter!]): Item }}\n\
             input Filter {{ keys: {arg} }}\n\
             type Item {{ keys: {out}, items: [Item!]! }}"
        )
    };
    // Input items made nullable: every old value still valid.
    for (old, new) in [("[Int!]", "[Int]"), ("[Filter!]", "[Filter]")] {
        let base = schema("[Int!]", "[Int]!");
        let pair = graphql(
            &base,
            &base.replace(&format!("s: {old}"), &format!("s: {new}")),
        );
        expect(
            &format!("input {old} -> {new}"),
            &pair,
            Compatible,
            &["request-type-widened"],
        );
    }
    // Output items made non-null: callers receive fewer values.
    for (old, new) in [
        ("keys: [Int]!", "keys: [Int!]!"),
        ("items: [Item]!", "items: [Item!]!"),
    ] {
        let base = schema("[Int!]", "[Int]!").replace("items: [Item!]!", "items: [Item]!");
        let pair = graphql(&base, &base.replace(old, new));
        expect(
            &format!("output {old} -> {new}"),
            &pair,
            Compatible,
            &["response-type-narrowed"],
        );
        // And back: breaking, still one nullability change.
        let pair = graphql(&base.replace(old, new), &base);
        expect(
            &format!("output {new} -> {old}"),
            &pair,
            Breaking,
            &["response-type-changed"],
        );
    }
}

/// A CSDL document with an enum `Color` (`members`) sent (an action parameter), received (a
/// function's result) and on an entity type (both), and a function `Find` whose return
/// value is the entity type with `nullable` as its `Nullable` facet.
fn csdl_enum(members: &str, nullable: &str) -> String {
    format!(
        r#"<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
<edmx:DataServices><Schema Namespace="d" xmlns="http://docs.oasis-open.org/odata/ns/edm">
<EnumType Name="Color">{members}</EnumType>
<EntityType Name="Order"><Key><PropertyRef Name="Id"/></Key>
  <Property Name="Id" Type="Edm.Int32" Nullable="false"/>
  <Property Name="Name" Type="Edm.String"/>
</EntityType>
<ComplexType Name="Paint"><Property Name="Color" Type="d.Color"/></ComplexType>
<Action Name="Pick"><Parameter Name="color" Type="d.Color"/></Action>
<Function Name="Current"><ReturnType Type="d.Paint"/></Function>
<Function Name="Find"><Parameter Name="id" Type="Edm.Int32"/><ReturnType Type="d.Order" Nullable="{nullable}"/></Function>
<EntityContainer Name="C">
  <EntitySet Name="Orders" EntityType="d.Order"/>
  <ActionImport Name="Pick" Action="d.Pick"/>
  <FunctionImport Name="Current" Function="d.Current"/>
  <FunctionImport Name="Find" Function="d.Find" EntitySet="Orders"/>
</EntityContainer>
</Schema></edmx:DataServices></edmx:Edmx>"#
    )
}

#[test]
fn odata_enum_members_are_judged_by_name_and_value() {
    let two = r#"<Member Name="Red" Value="0"/><Member Name="Blue" Value="1"/>"#;
    let pair = |old: &str, new: &str| odata((csdl_enum(old, "true"), csdl_enum(new, "true")));
    // A new name with a new value: what callers send still means the same (the enum is both
    // sent and received here, so the added value is breaking only where it is received).
    let added = format!(r#"{two}<Member Name="Green" Value="2"/>"#);
    let (got, lines) = verdict(&pair(two, &added));
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("request-enum-value-added")
                || l.starts_with("response-enum-value-added")),
        "{lines:#?}"
    );
    assert_eq!(got, Breaking, "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("request-enum-value-added")),
        "{lines:#?}"
    );
    // Dropping one: judged as the enum value removed, nothing about the values of the others.
    let (_, lines) = verdict(&pair(&added, two));
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("request-enum-value-removed")
                || l.starts_with("response-enum-value-removed")),
        "{lines:#?}"
    );
    // A kept name with a new value, or a new name reusing a value: breaking on every side.
    for (old, new) in [
        (two.to_string(), two.replace(r#"Value="1""#, r#"Value="5""#)),
        (
            two.to_string(),
            format!(r#"{two}<Member Name="Green" Value="1"/>"#),
        ),
    ] {
        let (got, lines) = verdict(&pair(&old, &new));
        assert_eq!(got, Breaking, "{lines:#?}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("enum-member-value-changed")),
            "{lines:#?}"
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with("schema-keyword-changed")),
            "{lines:#?}"
        );
    }
}

#[test]
fn odata_return_nullability_is_the_one_nullability_rule() {
    let two = r#"<Member Name="Red" Value="0"/>"#;
    let pair = |old: &str, new: &str| odata((csdl_enum(two, old), csdl_enum(two, new)));
    expect(
        "non-null",
        &pair("true", "false"),
        Compatible,
        &["navigation-became-non-null"],
    );
    expect(
        "nullable",
        &pair("false", "true"),
        Breaking,
        &["navigation-became-nullable"],
    );
}

#[test]
fn odata_integer_and_float_widths_are_ordered_on_every_side() {
    let t = |name: &str| format!(r#"Type="Edm.{name}""#);
    for (narrow, wide) in [
        ("Int16", "Int32"),
        ("Int32", "Int64"),
        ("Byte", "Int16"),
        ("Single", "Double"),
    ] {
        for (side, pair) in odata_sides(&t(narrow), &t(wide)) {
            let (want, rules): (_, &[&str]) = match side {
                "request" => (Compatible, &["request-constraint-relaxed"]),
                "response" => (Breaking, &["response-constraint-relaxed"]),
                _ => (
                    Breaking,
                    &["request-constraint-relaxed", "response-constraint-relaxed"],
                ),
            };
            expect(&format!("{side}: {narrow} -> {wide}"), &pair, want, rules);
        }
        for (side, pair) in odata_sides(&t(wide), &t(narrow)) {
            let want = if side == "response" {
                Compatible
            } else {
                Breaking
            };
            let (got, lines) = verdict(&pair);
            assert_eq!(got, want, "{side}: {wide} -> {narrow}: {lines:#?}");
        }
    }
}

#[test]
fn a_required_tool_parameter_made_optional_and_nullable_is_compatible() {
    use crate::core::normalize::mcp;
    // FastMCP / pydantic: `x: str` → `x: str | None = None`.
    let before = json!({"tools": [{"name": "t", "inputSchema": {"type": "object",
        "properties": {"x": {"type": "string", "title": "X"}}, "required": ["x"]}}]});
    let after = json!({"tools": [{"name": "t", "inputSchema": {"type": "object",
        "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}],
                             "default": null, "title": "X"}}}}]});
    let pair = (
        mcp::normalize_value("t.t", &before).unwrap(),
        mcp::normalize_value("t.t", &after).unwrap(),
    );
    expect(
        "x: str -> x: str | None = None",
        &pair,
        Compatible,
        &[
            "request-type-widened",
            "request-property-became-optional",
            "required-value-default-changed",
        ],
    );
    // A default changed on a value that was optional is still breaking.
    let optional = |default: Value| {
        json!({"tools": [{"name": "t", "inputSchema": {"type": "object",
            "properties": {"x": {"type": "string", "default": default}}}}]})
    };
    let pair = (
        mcp::normalize_value("t.t", &optional(json!("a"))).unwrap(),
        mcp::normalize_value("t.t", &optional(json!("b"))).unwrap(),
    );
    expect(
        "optional default",
        &pair,
        Breaking,
        &["request-default-changed"],
    );
}

/// The enum `Color` (`members`) used on one side only: `request` (an action parameter),
/// `response` (a function result's property) or `shared` (an entity type's property).
fn csdl_enum_on(side: &str, members: &str) -> String {
    let t = |s: &str| if s == side { "d.Color" } else { "Edm.String" };
    format!(
        r#"<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
<edmx:DataServices><Schema Namespace="d" xmlns="http://docs.oasis-open.org/odata/ns/edm">
<EnumType Name="Color">{members}</EnumType>
<EntityType Name="Order"><Key><PropertyRef Name="Id"/></Key>
  <Property Name="Id" Type="Edm.Int32" Nullable="false"/>
  <Property Name="Color" Type="{shared}"/>
</EntityType>
<ComplexType Name="Paint"><Property Name="Color" Type="{response}"/></ComplexType>
<Action Name="Pick"><Parameter Name="color" Type="{request}"/></Action>
<Function Name="Current"><ReturnType Type="d.Paint"/></Function>
<EntityContainer Name="C">
  <EntitySet Name="Orders" EntityType="d.Order"/>
  <ActionImport Name="Pick" Action="d.Pick"/>
  <FunctionImport Name="Current" Function="d.Current"/>
</EntityContainer>
</Schema></edmx:DataServices></edmx:Edmx>"#,
        shared = t("shared"),
        response = t("response"),
        request = t("request"),
    )
}

#[test]
fn odata_enum_members_by_value_on_every_side() {
    let two = r#"<Member Name="Red" Value="0"/><Member Name="Blue" Value="1"/>"#;
    let added = format!(r#"{two}<Member Name="Green" Value="2"/>"#);
    let renumbered = two.replace(r#"Value="1""#, r#"Value="5""#);
    let reused = format!(r#"{two}<Member Name="Green" Value="1"/>"#);
    for side in ["request", "response", "shared"] {
        let pair = |old: &str, new: &str| odata((csdl_enum_on(side, old), csdl_enum_on(side, new)));
        // A new name with a new value: the enum value added, by direction.
        let (want, rules): (_, &[&str]) = match side {
            "request" => (Compatible, &["request-enum-value-added"]),
            "response" => (Breaking, &["response-enum-value-added"]),
            _ => (
                Breaking,
                &["request-enum-value-added", "response-enum-value-added"],
            ),
        };
        expect(
            &format!("{side}: member added"),
            &pair(two, &added),
            want,
            rules,
        );
        // Dropped: the enum value removed, by direction.
        let (want, rules): (_, &[&str]) = match side {
            "request" => (Breaking, &["request-enum-value-removed"]),
            "response" => (Compatible, &["response-enum-value-removed"]),
            _ => (
                Breaking,
                &["request-enum-value-removed", "response-enum-value-removed"],
            ),
        };
        expect(
            &format!("{side}: member dropped"),
            &pair(&added, two),
            want,
            rules,
        );
        // A kept name renumbered: breaking on every side.
        expect(
            &format!("{side}: renumbered"),
            &pair(two, &renumbered),
            Breaking,
            &["enum-member-value-changed"],
        );
        // A new name reusing a value: breaking on every side.
        expect(
            &format!("{side}: value reused"),
            &pair(two, &reused),
            Breaking,
            &[
                "enum-member-value-changed",
                "request-enum-value-added",
                "response-enum-value-added",
            ],
        );
    }
}

#[test]
fn a_definition_under_a_read_only_value_is_still_judged_where_it_is_sent() {
    use crate::core::normalize::openapi;
    // `Tag` is sent twice in the request body: once under a readOnly wrapper (never sent; the
    // wrapper's own text changes too, so the walk goes through it first), once as itself; its
    // tighter maxLength is breaking where it is sent.
    let doc = |max: u32| {
        json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "paths": {"/x": {"post": {"operationId": "x",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                    "type": "object", "properties": {
                        "a": {"allOf": [{"$ref": "#/components/schemas/Tag"}], "readOnly": true,
                              "description": format!("at most {max}")},
                        "b": {"$ref": "#/components/schemas/Tag"}}}}}},
                "responses": {"204": {"description": "ok"}}}}},
            "components": {"schemas": {"Tag": {"type": "string", "maxLength": max}}}})
    };
    let pair = (
        openapi::normalize_value("t.t", &doc(9)).unwrap(),
        openapi::normalize_value("t.t", &doc(5)).unwrap(),
    );
    let (got, lines) = verdict(&pair);
    assert_eq!(got, Breaking, "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("request-constraint-tightened")),
        "{lines:#?}"
    );
}
