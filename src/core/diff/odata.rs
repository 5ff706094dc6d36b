//! OData rules (normalize/odata): facets, navigation nullability and containment, `Core.Immutable`
//! and kept annotations inside schemas (judged from the schema walker); an entity set's or
//! operation's facts in its endpoints' `meta` (annotations, navigation property bindings, a
//! function import's `EntitySet`, `IsComposable`); annotations with no place in the model
//! (`ToolSpec::extensions`, `annotations.<target>/<term>`). Capabilities restrictions are
//! endpoints present or absent, judged by the endpoint rules.

use super::emit::Emitter;
use super::rule::{Rule, Side};
use super::schema::{Direction, SchemaDiffer};
use super::shared::{changed_members, DOCUMENTATION_CHANGED, META_CHANGED, UNCLASSIFIED_CHANGE};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{EndpointSpec, Severity::*};
use crate::core::normalize::odata::{
    is_description, ANNOTATIONS_KEYWORD, CONTAINS_TARGET_KEYWORD, FACETS_KEYWORD,
    IMMUTABLE_KEYWORD, MEMBER_VALUES_KEYWORD, NULLABLE_KEYWORD,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

pub static ADDRESSING_CHANGED: Rule = Rule::new(
    "addressing-changed",
    Breaking,
    Side::Endpoint,
    "How related entities are addressed changed: `ContainsTarget`, a `NavigationPropertyBinding`, a function import's `EntitySet`.",
)
.keywords(&[CONTAINS_TARGET_KEYWORD]);

pub static ANNOTATION_CHANGED: Rule = Rule::new(
    "annotation-changed",
    Breaking,
    Side::Schema,
    "An OData vocabulary annotation the model does not read changed (deny by default; descriptions are documentation).",
)
.keywords(&[ANNOTATIONS_KEYWORD]);

pub static COMPOSABLE_ADDED: Rule = Rule::new(
    "composable-added",
    Compatible,
    Side::Endpoint,
    "A function became composable (`IsComposable` false → true): callers may append to its path.",
);

pub static COMPOSABLE_REMOVED: Rule = Rule::new(
    "composable-removed",
    Breaking,
    Side::Endpoint,
    "A function is no longer composable (`IsComposable` true → false): paths that continue after it fail.",
);

pub static ENUM_MEMBER_VALUE_CHANGED: Rule = Rule::new(
    "enum-member-value-changed",
    Breaking,
    Side::Schema,
    "An enum member kept its name but changed its value, or a new member reuses the value of another: a value that travels as a number now means another member. (A new name with a new value, or a dropped member, is judged as the enum value added or removed.)",
)
.keywords(&[MEMBER_VALUES_KEYWORD]);

pub static FACET_CHANGED: Rule = Rule::new(
    "facet-changed",
    Breaking,
    Side::Schema,
    "A facet that is neither tighter nor looser changed (`SRID`, a non-numeric `Precision` or `Scale`, a decimal's (integer digits, `Scale`) pair where neither holds the other's values: `Decimal(10,2)` → `Decimal(10,3)`).",
)
.keywords(&[FACETS_KEYWORD]);

pub static IMMUTABLE_CHANGED: Rule = Rule::new(
    "immutable-changed",
    Breaking,
    Side::Schema,
    "A property became or stopped being `Core.Immutable` (settable on insert only).",
)
.keywords(&[IMMUTABLE_KEYWORD]);

pub static NAVIGATION_BECAME_NON_NULL: Rule = Rule::new(
    "navigation-became-non-null",
    Compatible,
    Side::Response,
    "A navigation property or structured return value is now always present (`Nullable` true → false).",
)
.keywords(&[NULLABLE_KEYWORD]);

pub static NAVIGATION_BECAME_NULLABLE: Rule = Rule::new(
    "navigation-became-nullable",
    Breaking,
    Side::Response,
    "A navigation property or structured return value may now be null (`Nullable` false → true).",
)
.keywords(&[NULLABLE_KEYWORD]);

pub static REQUEST_FACET_RELAXED: Rule = Rule::new(
    "request-facet-relaxed",
    Compatible,
    Side::Request,
    "A facet of a value callers send got looser (larger `Precision`; a decimal's integer digits and `Scale` both no smaller; `Unicode` allowed).",
)
.keywords(&[FACETS_KEYWORD]);

pub static REQUEST_FACET_TIGHTENED: Rule = Rule::new(
    "request-facet-tightened",
    Breaking,
    Side::Request,
    "A facet of a value callers send got tighter (smaller `Precision`; a decimal's integer digits and `Scale` both no larger; `Unicode=\"false\"`).",
)
.keywords(&[FACETS_KEYWORD]);

pub static RESPONSE_FACET_RELAXED: Rule = Rule::new(
    "response-facet-relaxed",
    Breaking,
    Side::Response,
    "A facet of a value callers receive got looser: values they did not expect may arrive.",
)
.keywords(&[FACETS_KEYWORD]);

pub static RESPONSE_FACET_TIGHTENED: Rule = Rule::new(
    "response-facet-tightened",
    Compatible,
    Side::Response,
    "A facet of a value callers receive got tighter.",
)
.keywords(&[FACETS_KEYWORD]);

pub static PERMISSIONS_WRITE_GRANTED: Rule = Rule::new(
    "permissions-write-granted",
    Security,
    Side::Schema,
    "A value became writable (`Core.Permissions` gained `Write`, or a read-only `Core.Permissions` was dropped): a side-effect escalation.",
);

pub static PERMISSIONS_WRITE_REVOKED: Rule = Rule::new(
    "permissions-write-revoked",
    Breaking,
    Side::Schema,
    "A value is no longer writable (`Core.Permissions` lost `Write`, or a read-only one was added): callers that set it fail.",
);

const PERMISSIONS_TERM: &str = "Org.OData.Core.V1.Permissions";

/// Whether a `Core.Permissions` annotation lets callers write: absent states no restriction;
/// `None` when its members cannot be read (then it is judged as any other annotation).
fn permits_write(annotation: Option<&Value>) -> Option<bool> {
    let Some(value) = annotation else {
        return Some(true);
    };
    let text = match value.get("EnumMember").and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None => value
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c["@"] == "EnumMember")
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let members: Vec<&str> = text
        .split_whitespace()
        .map(|m| m.rsplit('/').next().unwrap_or(m))
        .collect();
    let known = ["None", "Read", "Write", "ReadWrite", "Invoke"];
    if members.is_empty() || !members.iter().all(|m| known.contains(m)) {
        return None;
    }
    Some(members.iter().any(|m| *m == "Write" || *m == "ReadWrite"))
}

/// The rule for one annotation key: documentation for descriptions, else deny by default.
pub(super) fn annotation_rule(key: &str) -> &'static Rule {
    if is_description(key) {
        &DOCUMENTATION_CHANGED
    } else {
        &ANNOTATION_CHANGED
    }
}

/// Each key of two annotation maps that differs, judged by [`annotation_rule`].
fn compare_annotations(
    at: &str,
    o: Option<&Value>,
    n: Option<&Value>,
    mut emit: impl FnMut(&'static Rule, String, Option<Value>, Option<Value>),
) {
    for (key, before, after) in changed_members(o, n) {
        let write =
            (key == PERMISSIONS_TERM).then(|| (permits_write(before), permits_write(after)));
        let rule = match write {
            Some((Some(false), Some(true))) => &PERMISSIONS_WRITE_GRANTED,
            Some((Some(true), Some(false))) => &PERMISSIONS_WRITE_REVOKED,
            _ => annotation_rule(key),
        };
        emit(rule, format!("{at}.{key}"), before.cloned(), after.cloned());
    }
}

/// A numeric facet's order: absent is unbounded.
fn facet_shift(key: &str, o: Option<&Value>, n: Option<&Value>) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering::*;
    match key {
        // Absent means true (any Unicode character).
        "Unicode" => {
            let allows = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(true);
            Some(allows(n).cmp(&allows(o)))
        }
        "Precision" | "Scale" => match (o, n) {
            (None, None) => Some(Equal),
            (None, Some(v)) => v.as_u64().map(|_| Less),
            (Some(v), None) => v.as_u64().map(|_| Greater),
            (Some(a), Some(b)) => Some(b.as_u64()?.cmp(&a.as_u64()?)),
        },
        _ => None,
    }
}

/// A decimal's `Precision` and `Scale` judged together when both are numbers on both sides:
/// the values it holds are (integer digits `Precision - Scale`, `Scale`), so `Decimal(10,2)`
/// and `Decimal(10,3)` hold neither the other's values (8 and 7 integer digits). `Greater`
/// when the new pair holds every old value, `Less` when the old holds every new one, `None`
/// (neither) when they cross; outer `None` when the pair does not apply (a facet absent or not
/// a number: each is then judged alone).
fn decimal_shift(
    of: &Map<String, Value>,
    nf: &Map<String, Value>,
) -> Option<Option<std::cmp::Ordering>> {
    use std::cmp::Ordering::*;
    let pair = |f: &Map<String, Value>| {
        let p = f.get("Precision")?.as_u64()?;
        let s = f.get("Scale")?.as_u64()?;
        Some((p.checked_sub(s)?, s))
    };
    let ((oi, os), (ni, ns)) = (pair(of)?, pair(nf)?);
    Some(match (ni.cmp(&oi), ns.cmp(&os)) {
        (Equal, Equal) => Some(Equal),
        (Greater | Equal, Greater | Equal) => Some(Greater),
        (Less | Equal, Less | Equal) => Some(Less),
        _ => None,
    })
}

/// The OData keywords of one schema pair (called by the schema walker).
pub(super) fn compare_schema_keywords(
    differ: &mut SchemaDiffer,
    o: &Map<String, Value>,
    n: &Map<String, Value>,
    dir: Direction,
    path: &str,
    out: &mut Emitter,
) {
    if o.get(FACETS_KEYWORD) != n.get(FACETS_KEYWORD) {
        let facets = |m: &Map<String, Value>| {
            m.get(FACETS_KEYWORD)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (of, nf) = (facets(o), facets(n));
        let decimal = decimal_shift(&of, &nf);
        let keys: BTreeSet<&String> = of.keys().chain(nf.keys()).collect();
        for key in keys {
            let (before, after) = (of.get(key), nf.get(key));
            if before == after {
                continue;
            }
            let shift = match (key.as_str(), decimal) {
                ("Precision" | "Scale", Some(pair)) => pair,
                _ => facet_shift(key, before, after),
            };
            let rule = match (shift, dir) {
                (Some(std::cmp::Ordering::Less), Direction::Request) => &REQUEST_FACET_TIGHTENED,
                (Some(std::cmp::Ordering::Greater), Direction::Request) => &REQUEST_FACET_RELAXED,
                (Some(std::cmp::Ordering::Less), Direction::Response) => &RESPONSE_FACET_TIGHTENED,
                (Some(std::cmp::Ordering::Greater), Direction::Response) => &RESPONSE_FACET_RELAXED,
                _ => &FACET_CHANGED,
            };
            differ.emit(
                out,
                rule,
                &format!("{path}.{key}"),
                ChangeKind::FacetChanged,
                before.cloned(),
                after.cloned(),
                format!("The {key} facet at {path} changed."),
            );
        }
    }
    if o.get(MEMBER_VALUES_KEYWORD) != n.get(MEMBER_VALUES_KEYWORD) {
        let values = |m: &Map<String, Value>| {
            m.get(MEMBER_VALUES_KEYWORD)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (ov, nv) = (values(o), values(n));
        for (name, after) in &nv {
            let before = ov.get(name);
            let changed = match before {
                Some(before) => before != after,
                // A new name: breaking only when it takes a value another name had.
                None => ov.iter().any(|(other, v)| other != name && v == after),
            };
            if changed {
                differ.emit(
                    out,
                    &ENUM_MEMBER_VALUE_CHANGED,
                    &format!("{path}.{MEMBER_VALUES_KEYWORD}.{name}"),
                    ChangeKind::EnumChanged,
                    before.cloned(),
                    Some(after.clone()),
                    format!(
                        "The value of enum member {name} at {path} changed or is another member's."
                    ),
                );
            }
        }
    }
    let non_null = |m: &Map<String, Value>| m.get(NULLABLE_KEYWORD) == Some(&Value::Bool(false));
    // Navigation values and results are received; the request side of an entity type (deep
    // insert) does not judge them, and its endpoints are explained by the shared definition.
    if non_null(o) != non_null(n) && dir == Direction::Response {
        let rule = if non_null(n) {
            &NAVIGATION_BECAME_NON_NULL
        } else {
            &NAVIGATION_BECAME_NULLABLE
        };
        differ.emit(
            out,
            rule,
            &format!("{path}.Nullable"),
            ChangeKind::NullableChanged,
            Some(json!(!non_null(o))),
            Some(json!(!non_null(n))),
            format!(
                "{path} {}.",
                if non_null(n) {
                    "is now always present"
                } else {
                    "may now be null"
                }
            ),
        );
    }
    for (keyword, rule) in [
        (CONTAINS_TARGET_KEYWORD, &ADDRESSING_CHANGED),
        (IMMUTABLE_KEYWORD, &IMMUTABLE_CHANGED),
    ] {
        if o.get(keyword) != n.get(keyword) {
            differ.emit(
                out,
                rule,
                &format!("{path}.{keyword}"),
                ChangeKind::OdataFactChanged,
                o.get(keyword).cloned(),
                n.get(keyword).cloned(),
                format!("{keyword} changed at {path}."),
            );
        }
    }
    if o.get(ANNOTATIONS_KEYWORD) != n.get(ANNOTATIONS_KEYWORD) {
        let mut found = Vec::new();
        compare_annotations(
            &format!("{path}.{ANNOTATIONS_KEYWORD}"),
            o.get(ANNOTATIONS_KEYWORD),
            n.get(ANNOTATIONS_KEYWORD),
            |rule, at, before, after| found.push((rule, at, before, after)),
        );
        for (rule, at, before, after) in found {
            differ.emit(
                out,
                rule,
                &at,
                ChangeKind::AnnotationChanged,
                before,
                after,
                format!("An annotation changed at {at}."),
            );
        }
    }
}

/// An OData endpoint's `meta`: annotations, navigation property bindings, an import's
/// `EntitySet`, `IsComposable`.
pub(crate) fn compare_facts(o: &EndpointSpec, n: &EndpointSpec, at: &str, out: &mut Emitter) {
    for (key, before, after) in changed_members(o.meta.as_deref(), n.meta.as_deref()) {
        match key.as_str() {
            "annotations" => compare_annotations(
                &format!("{at}.annotations"),
                before,
                after,
                |rule, path, b, a| {
                    out.emit(
                        rule,
                        &path,
                        ChangeKind::AnnotationChanged,
                        b,
                        a,
                        format!("An annotation of {} changed.", n.name),
                    )
                },
            ),
            // Attributes and child elements the model has no place for (deny by default).
            "unread" => {
                for (name, was, now) in changed_members(before, after) {
                    out.emit(
                        &UNCLASSIFIED_CHANGE,
                        &format!("{at}.{name}"),
                        ChangeKind::UnclassifiedChange,
                        was.cloned(),
                        now.cloned(),
                        format!("The {name} of {}, kept but not modelled, changed.", n.name),
                    );
                }
            }
            "bindings" | "entitySet" => out.emit(
                &ADDRESSING_CHANGED,
                &format!("{at}.{key}"),
                ChangeKind::AddressingChanged,
                before.cloned(),
                after.cloned(),
                format!("How {} addresses related entities changed.", n.name),
            ),
            "composable" => {
                let now = after == Some(&Value::Bool(true));
                out.emit(
                    if now {
                        &COMPOSABLE_ADDED
                    } else {
                        &COMPOSABLE_REMOVED
                    },
                    &format!("{at}.composable"),
                    ChangeKind::ComposableChanged,
                    Some(json!(!now)),
                    Some(json!(now)),
                    format!(
                        "{} is {} composable.",
                        n.name,
                        if now { "now" } else { "no longer" }
                    ),
                );
            }
            _ => out.emit(
                &META_CHANGED,
                &format!("{at}.meta.{key}"),
                ChangeKind::MetaChanged,
                before.cloned(),
                after.cloned(),
                format!("The metadata {key} of {} changed.", n.name),
            ),
        }
    }
}

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &ADDRESSING_CHANGED,
    &ANNOTATION_CHANGED,
    &COMPOSABLE_ADDED,
    &COMPOSABLE_REMOVED,
    &ENUM_MEMBER_VALUE_CHANGED,
    &FACET_CHANGED,
    &IMMUTABLE_CHANGED,
    &NAVIGATION_BECAME_NON_NULL,
    &NAVIGATION_BECAME_NULLABLE,
    &PERMISSIONS_WRITE_GRANTED,
    &PERMISSIONS_WRITE_REVOKED,
    &REQUEST_FACET_RELAXED,
    &REQUEST_FACET_TIGHTENED,
    &RESPONSE_FACET_RELAXED,
    &RESPONSE_FACET_TIGHTENED,
];

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{check_case, odata, Case};

    const BASE: &str = r#"<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
<edmx:Reference Uri="https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Core.V1.xml"><edmx:Include Namespace="Org.OData.Core.V1" Alias="Core"/></edmx:Reference>
<edmx:DataServices><Schema Namespace="d" xmlns="http://docs.oasis-open.org/odata/ns/edm">
<EntityType Name="Order"><Key><PropertyRef Name="Id"/></Key>
  <Property Name="Id" Type="Edm.Int32" Nullable="false"/>
  <Property Name="Total" Type="Edm.Decimal" Precision="10" Scale="2"/>
  <Property Name="Note" Type="Edm.String" Unicode="true"/>
  <Property Name="Code" Type="Edm.String"><Annotation Term="Core.Immutable" Bool="true"/></Property>
  <Property Name="Status" Type="Edm.String"><Annotation Term="Core.Permissions" EnumMember="Core.Permission/Read"/></Property>
  <Property Name="Where" Type="Edm.GeographyPoint" SRID="4326"/>
  <NavigationProperty Name="Customer" Type="d.Customer" Nullable="false"/>
  <NavigationProperty Name="Lines" Type="Collection(d.Line)"/>
</EntityType>
<EntityType Name="Customer"><Key><PropertyRef Name="Id"/></Key><Property Name="Id" Type="Edm.Int32" Nullable="false"/></EntityType>
<EntityType Name="Line"><Key><PropertyRef Name="Id"/></Key><Property Name="Id" Type="Edm.Int32" Nullable="false"/></EntityType>
<Function Name="Top" IsComposable="true"><ReturnType Type="Collection(d.Order)"/></Function>
<EntityContainer Name="C">
  <EntitySet Name="Orders" EntityType="d.Order"><NavigationPropertyBinding Path="Customer" Target="Customers"/></EntitySet>
  <EntitySet Name="Customers" EntityType="d.Customer"/>
  <FunctionImport Name="Top" Function="d.Top" EntitySet="Orders"/>
</EntityContainer>
<Annotations Target="d.C/Orders"><Annotation Term="Org.OData.Capabilities.V1.SearchRestrictions"><Record><PropertyValue Property="Searchable" Bool="true"/></Record></Annotation></Annotations>
</Schema></edmx:DataServices></edmx:Edmx>"#;

    fn edit(from: &str, to: &str) -> (String, String) {
        assert!(BASE.contains(from), "{from}");
        (BASE.to_string(), BASE.replace(from, to))
    }

    /// One case per rule of this family.
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &REQUEST_FACET_TIGHTENED,
                odata(edit(
                    r#"Precision="10" Scale="2""#,
                    r#"Precision="9" Scale="1""#,
                )),
            ),
            Case::new(&FACET_CHANGED, odata(edit(r#"Scale="2""#, r#"Scale="3""#))),
            Case::new(
                &REQUEST_FACET_RELAXED,
                odata(edit(r#"Precision="10""#, r#"Precision="12""#)),
            ),
            Case::new(
                &RESPONSE_FACET_TIGHTENED,
                odata(edit(
                    r#"Precision="10" Scale="2""#,
                    r#"Precision="9" Scale="1""#,
                )),
            ),
            Case::new(
                &RESPONSE_FACET_RELAXED,
                odata(edit(r#"Precision="10""#, r#"Precision="12""#)),
            ),
            Case::new(
                &REQUEST_FACET_TIGHTENED,
                odata(edit(r#"Unicode="true""#, r#"Unicode="false""#)),
            ),
            Case::new(
                &FACET_CHANGED,
                odata(edit(r#"SRID="4326""#, r#"SRID="3857""#)),
            ),
            Case::new(&ENUM_MEMBER_VALUE_CHANGED, {
                let with = |value: &str| {
                    BASE.replace(
                        r#"<EntityType Name="Customer">"#,
                        &format!(r#"<EnumType Name="Tier"><Member Name="Gold" Value="{value}"/></EnumType><EntityType Name="Customer">"#),
                    )
                    .replace(
                        r#"<Property Name="Id" Type="Edm.Int32" Nullable="false"/></EntityType>"#,
                        r#"<Property Name="Id" Type="Edm.Int32" Nullable="false"/><Property Name="Tier" Type="d.Tier"/></EntityType>"#,
                    )
                };
                odata((with("1"), with("2")))
            }),
            Case::new(
                &NAVIGATION_BECAME_NULLABLE,
                odata(edit(
                    r#"Type="d.Customer" Nullable="false""#,
                    r#"Type="d.Customer""#,
                )),
            ),
            Case::new(
                &NAVIGATION_BECAME_NON_NULL,
                odata(edit(
                    r#"Type="Collection(d.Line)""#,
                    r#"Type="Collection(d.Line)" Nullable="false""#,
                )),
            ),
            Case::new(
                &ADDRESSING_CHANGED,
                odata(edit(
                    r#"Type="Collection(d.Line)""#,
                    r#"Type="Collection(d.Line)" ContainsTarget="true""#,
                )),
            ),
            Case::new(
                &ADDRESSING_CHANGED,
                odata(edit(r#"Target="Customers""#, r#"Target="Orders""#)),
            ),
            Case::new(
                &ADDRESSING_CHANGED,
                odata(edit(r#"EntitySet="Orders""#, r#"EntitySet="Customers""#)),
            ),
            Case::new(
                &COMPOSABLE_REMOVED,
                odata(edit(r#" IsComposable="true""#, "")),
            ),
            Case::new(
                &COMPOSABLE_ADDED,
                odata_reversed(edit(r#" IsComposable="true""#, "")),
            ),
            Case::new(
                &IMMUTABLE_CHANGED,
                odata(edit(
                    r#"<Annotation Term="Core.Immutable" Bool="true"/>"#,
                    "",
                )),
            ),
            Case::new(
                &PERMISSIONS_WRITE_GRANTED,
                odata(edit(
                    r#"<Annotation Term="Core.Permissions" EnumMember="Core.Permission/Read"/>"#,
                    r#"<Annotation Term="Core.Permissions" EnumMember="Core.Permission/ReadWrite"/>"#,
                )),
            ),
            Case::new(
                &PERMISSIONS_WRITE_REVOKED,
                odata_reversed(edit(
                    r#"<Annotation Term="Core.Permissions" EnumMember="Core.Permission/Read"/>"#,
                    "",
                )),
            ),
            Case::new(
                &ANNOTATION_CHANGED,
                odata(edit(
                    r#"Property="Searchable" Bool="true""#,
                    r#"Property="Searchable" Bool="false""#,
                )),
            ),
        ]
    }

    fn odata_reversed((a, b): (String, String)) -> crate::core::diff::tests::Pair {
        odata((b, a))
    }

    /// An entity set becoming insertable is a side-effect escalation (a new write endpoint);
    /// losing delete is a removal.
    #[test]
    fn capabilities_restrictions_are_endpoints() {
        use crate::core::diff::classify;
        use crate::core::model::Compatibility;
        let restricted = BASE.replace(
            "</Schema>",
            r#"<Annotations Target="d.C/Customers"><Annotation Term="Org.OData.Capabilities.V1.InsertRestrictions"><Record><PropertyValue Property="Insertable" Bool="false"/></Record></Annotation></Annotations></Schema>"#,
        );
        let (old, new) = odata((restricted.clone(), BASE.to_string()));
        assert!(!old.endpoints.iter().any(|e| e.name == "Customers.create"));
        let report = classify(&old, &new, &Default::default());
        assert_eq!(report.compatibility, Compatibility::SecurityReview);
        assert!(report
            .changes
            .iter()
            .any(|c| c.rule == "endpoint-added-write"));
        // The restriction said nothing else, so it leaves no annotation behind.
        assert!(old
            .endpoints
            .iter()
            .all(|e| e.name != "Customers" || e.meta.is_none()));
        let no_delete = BASE.replace(
            "</Schema>",
            r#"<Annotations Target="d.C/Customers"><Annotation Term="Org.OData.Capabilities.V1.DeleteRestrictions"><Record><PropertyValue Property="Deletable"><Bool>false</Bool></PropertyValue></Record></Annotation></Annotations></Schema>"#,
        );
        let (old, new) = odata((BASE.to_string(), no_delete));
        let report = classify(&old, &new, &Default::default());
        assert_eq!(report.compatibility, Compatibility::Breaking);
        assert!(report.changes.iter().any(|c| c.rule == "endpoint-removed"));
    }

    /// A description annotation is documentation (info), wherever it sits.
    #[test]
    fn descriptions_are_documentation() {
        use crate::core::diff::classify;
        use crate::core::model::Compatibility;
        let described = |text: &str| {
            BASE.replace(
                "</Schema>",
                &format!(r#"<Annotations Target="d.Order/Total"><Annotation Term="Org.OData.Core.V1.Description" String="{text}"/></Annotations><Annotations Target="d.C"><Annotation Term="Org.OData.Core.V1.Description" String="{text}"/></Annotations></Schema>"#),
            )
        };
        let (old, new) = odata((described("Total"), described("Sum")));
        let report = classify(&old, &new, &Default::default());
        assert_eq!(
            report.compatibility,
            Compatibility::Compatible,
            "{:#?}",
            report.changes
        );
        assert!(report
            .changes
            .iter()
            .all(|c| c.rule == "documentation-changed"));
    }

    #[test]
    fn cases_fire_their_rules() {
        for case in cases() {
            check_case(&case);
        }
    }
}
