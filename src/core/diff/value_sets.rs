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
