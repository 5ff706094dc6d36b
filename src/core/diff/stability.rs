//! Stability and sunset rules (issue 31): direction-aware judgements of an endpoint's
//! stability level (`x-stability-level`), its sunset (`x-sunset`, else a declared `Sunset`
//! response header) and a declared `Deprecation` response header. The two extensions were
//! judged by `extension-changed` before; the rules here are split out of it
//! (`Rule::split_from`), so a user's override of `extension-changed` keeps applying to them,
//! and `extension-changed` stays silent for a change one of them judges
//! (`core::sunset::judged_extension`, read by the endpoint family's kept-field walk). The facts
//! come from `core::sunset`; the policy that reads them from the accepted side
//! (`min_stability`, `allow_removal_after_sunset`) is the emitter's.

use super::emit::Emitter;
use super::rule::{Rule, Side};
use crate::core::change_kind::ChangeKind;
use crate::core::model::{EndpointSpec, Severity::*};
use crate::core::sunset::{
    sunset_change, DateFact, EndpointFacts, SunsetChange, STABILITY_KEY, SUNSET_KEY,
};
use serde_json::{json, Value};

const PARENT: &[&str] = &["extension-changed"];

pub static STABILITY_LOWERED: Rule = Rule::new(
    "stability-lowered",
    Breaking,
    Side::Endpoint,
    "An endpoint's `x-stability-level` went down (stable > beta > alpha > draft; a level added where none was lowers it from stable).",
)
.split_from(PARENT);

pub static STABILITY_RAISED: Rule = Rule::new(
    "stability-raised",
    Info,
    Side::Endpoint,
    "An endpoint's `x-stability-level` went up (or was removed: missing is stable).",
)
.split_from(PARENT);

pub static SUNSET_ADDED: Rule = Rule::new(
    "sunset-added",
    Breaking,
    Side::Endpoint,
    "An endpoint gained a sunset (`x-sunset`, or a declared `Sunset` response header): it will stop answering.",
)
.split_from(PARENT);

pub static SUNSET_ADVANCED: Rule = Rule::new(
    "sunset-advanced",
    Breaking,
    Side::Endpoint,
    "An endpoint's sunset date moved earlier.",
)
.split_from(PARENT);

pub static SUNSET_POSTPONED: Rule = Rule::new(
    "sunset-postponed",
    Info,
    Side::Endpoint,
    "An endpoint's sunset date moved later.",
)
.split_from(PARENT);

pub static SUNSET_REMOVED: Rule = Rule::new(
    "sunset-removed",
    Info,
    Side::Endpoint,
    "An endpoint's sunset (or its date) was withdrawn.",
)
.split_from(PARENT);

pub static SUNSET_DATE_INVALID: Rule = Rule::new(
    "sunset-date-invalid",
    Breaking,
    Side::Endpoint,
    "An endpoint's sunset date is not YYYY-MM-DD, RFC 3339, HTTP-date or @seconds: never read as no sunset.",
)
.split_from(PARENT);

pub static DEPRECATED_ADDED: Rule = Rule::new(
    "deprecated-added",
    Info,
    Side::Endpoint,
    "An endpoint declared a `Deprecation` response header (RFC 9745), with or without its date.",
);

pub static DEPRECATED_REMOVED: Rule = Rule::new(
    "deprecated-removed",
    Info,
    Side::Endpoint,
    "An endpoint no longer declares a `Deprecation` response header.",
);

/// Every rule of this file (the registry lists the families, `rules::FAMILIES`).
pub static RULES: &[&Rule] = &[
    &DEPRECATED_ADDED,
    &DEPRECATED_REMOVED,
    &STABILITY_LOWERED,
    &STABILITY_RAISED,
    &SUNSET_ADDED,
    &SUNSET_ADVANCED,
    &SUNSET_DATE_INVALID,
    &SUNSET_POSTPONED,
    &SUNSET_REMOVED,
];

fn show(fact: Option<&DateFact>) -> Option<Value> {
    fact.map(|f| match f {
        DateFact::Known(d) => json!(d.to_string()),
        DateFact::Unknown => json!("declared, no date"),
        DateFact::Invalid(text) => json!(text),
    })
}

/// Judges a matched pair of endpoints (`at`: their path in the report) by their facts.
pub(super) fn compare(
    o: &EndpointSpec,
    n: &EndpointSpec,
    (of, nf): (&EndpointFacts, &EndpointFacts),
    at: &str,
    out: &mut Emitter,
) {
    if let (Ok(was), Ok(is)) = (&of.stability, &nf.stability) {
        if was != is {
            let lowered = is < was;
            out.emit(
                if lowered {
                    &STABILITY_LOWERED
                } else {
                    &STABILITY_RAISED
                },
                &format!("{at}.{STABILITY_KEY}"),
                ChangeKind::StabilityChanged,
                o.extensions.get(STABILITY_KEY).cloned(),
                n.extensions.get(STABILITY_KEY).cloned(),
                format!(
                    "The stability of {} went {} from {} to {}.",
                    n.name,
                    if lowered { "down" } else { "up" },
                    was.as_str(),
                    is.as_str()
                ),
            );
        }
    }
    let by_extension =
        o.extensions.contains_key(SUNSET_KEY) || n.extensions.contains_key(SUNSET_KEY);
    if let Some(change) = sunset_change(of.sunset.as_ref(), nf.sunset.as_ref()) {
        let (rule, what) = match change {
            SunsetChange::Added => (&SUNSET_ADDED, "gained a sunset"),
            SunsetChange::Advanced => (&SUNSET_ADVANCED, "has an earlier sunset"),
            SunsetChange::Postponed => (&SUNSET_POSTPONED, "has a later sunset"),
            SunsetChange::Removed => (&SUNSET_REMOVED, "no longer has a sunset date"),
            SunsetChange::Invalid => (
                &SUNSET_DATE_INVALID,
                "states a sunset date that does not parse",
            ),
        };
        let path = if by_extension {
            format!("{at}.{SUNSET_KEY}")
        } else {
            format!("{at}.sunset")
        };
        out.emit(
            rule,
            &path,
            ChangeKind::SunsetChanged,
            show(of.sunset.as_ref()),
            show(nf.sunset.as_ref()),
            format!("{} {what}.", n.name),
        );
    }
    if of.deprecation.is_none() && nf.deprecation.is_some() {
        out.emit(
            &DEPRECATED_ADDED,
            &format!("{at}.deprecation"),
            ChangeKind::DeprecatedChanged,
            None,
            show(nf.deprecation.as_ref()),
            format!("{} declares a Deprecation header.", n.name),
        );
    } else if of.deprecation.is_some() && nf.deprecation.is_none() {
        out.emit(
            &DEPRECATED_REMOVED,
            &format!("{at}.deprecation"),
            ChangeKind::DeprecatedChanged,
            show(of.deprecation.as_ref()),
            None,
            format!("{} no longer declares a Deprecation header.", n.name),
        );
    }
}

#[cfg(test)]
pub(super) mod cases {
    use super::*;
    use crate::core::diff::tests::{at, check_case, openapi, openapi_pair, Case, LIST};
    use serde_json::json;

    /// One case per rule of this family.
    pub(in crate::core::diff) fn cases() -> Vec<Case> {
        vec![
            Case::new(
                &STABILITY_LOWERED,
                openapi(|d| at(d, LIST)["x-stability-level"] = json!("beta")),
            ),
            Case::new(
                &STABILITY_RAISED,
                openapi_pair(
                    |d| at(d, LIST)["x-stability-level"] = json!("alpha"),
                    |d| at(d, LIST)["x-stability-level"] = json!("beta"),
                ),
            ),
            Case::new(
                &SUNSET_ADDED,
                openapi(|d| at(d, LIST)["x-sunset"] = json!("2027-01-31")),
            ),
            Case::new(
                &SUNSET_ADVANCED,
                openapi_pair(
                    |d| at(d, LIST)["x-sunset"] = json!("2027-06-01"),
                    |d| at(d, LIST)["x-sunset"] = json!("Sun, 31 Jan 2027 00:00:00 GMT"),
                ),
            ),
            Case::new(
                &SUNSET_POSTPONED,
                openapi_pair(
                    |d| at(d, LIST)["x-sunset"] = json!("2027-01-31"),
                    |d| at(d, LIST)["x-sunset"] = json!("2027-06-01T00:00:00Z"),
                ),
            ),
            Case::new(
                &SUNSET_REMOVED,
                openapi_pair(|d| at(d, LIST)["x-sunset"] = json!("2027-01-31"), |_| {}),
            ),
            Case::new(
                &SUNSET_DATE_INVALID,
                openapi(|d| at(d, LIST)["x-sunset"] = json!("next spring")),
            ),
            Case::new(
                &DEPRECATED_ADDED,
                openapi(|d| {
                    at(d, LIST)["responses"]["200"]["headers"]["Deprecation"] =
                        json!({"schema": {"type": "string", "example": "@1801439999"}});
                }),
            ),
            Case::new(
                &DEPRECATED_REMOVED,
                openapi_pair(
                    |d| {
                        at(d, LIST)["responses"]["200"]["headers"]["Deprecation"] =
                            json!({"schema": {"type": "string"}});
                    },
                    |_| {},
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

    /// The split rules replace `extension-changed` for the extension they judge; a level that
    /// names nothing is still `extension-changed`.
    #[test]
    fn a_judged_extension_is_not_also_extension_changed() {
        use crate::core::diff::classify;
        let (old, new) = openapi(|d| at(d, LIST)["x-stability-level"] = json!("beta"));
        let report = classify(&old, &new, &Default::default());
        let rules: Vec<&str> = report.changes.iter().map(|c| c.rule.as_str()).collect();
        assert_eq!(rules, ["stability-lowered"]);
        let (old, new) = openapi(|d| at(d, LIST)["x-stability-level"] = json!("gamma"));
        let report = classify(&old, &new, &Default::default());
        let rules: Vec<&str> = report.changes.iter().map(|c| c.rule.as_str()).collect();
        assert_eq!(rules, ["extension-changed"]);
        let (old, new) = openapi(|d| {
            at(d, LIST)["responses"]["200"]["headers"]["Sunset"] =
                json!({"schema": {"type": "string", "const": "Sun, 31 Jan 2027 00:00:00 GMT"}});
        });
        let report = classify(&old, &new, &Default::default());
        assert!(report
            .changes
            .iter()
            .any(|c| c.rule == "sunset-added" && c.path == "endpoints.listPets.sunset"));
    }
}
