//! Stability and sunset facts (issue 31): the dates an endpoint declares (`YYYY-MM-DD`,
//! RFC 3339, HTTP-date as RFC 9110's IMF-fixdate, and RFC 9745's structured date `@<unix
//! seconds>`), its stability level (OpenAPI `x-stability-level`: `draft` < `alpha` < `beta` <
//! `stable`; missing = `stable`), its deprecation (`deprecated`, a declared `Deprecation`
//! response header, GraphQL `@deprecated`, OData `Core.Revisions` of kind `Deprecated`) and its
//! sunset (`x-sunset`, else a declared `Sunset` response header, RFC 8594), read from a
//! normalized endpoint; and the stability policy a watch judges with ([`SunsetPolicy`]). Pure:
//! the check date is an input.

use crate::core::model::EndpointSpec;
use serde_json::Value;
use std::collections::BTreeMap;

/// The endpoint extension holding its stability level.
pub const STABILITY_KEY: &str = "x-stability-level";
/// The endpoint extension holding its sunset date.
pub const SUNSET_KEY: &str = "x-sunset";
/// How long before a sunset the daemon warns, unless `sunset_warning` says otherwise.
pub const DEFAULT_SUNSET_WARNING_DAYS: i64 = 30;

/// A calendar date (UTC), as days since 1970-01-01 plus its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    days: i64,
}

impl Date {
    /// Parses `YYYY-MM-DD` (a real calendar day).
    pub fn parse(text: &str) -> Option<Date> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let (y, m, d) = (
            digits(&text[0..4])?,
            digits(&text[5..7])?,
            digits(&text[8..10])?,
        );
        if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
            return None;
        }
        Some(Date {
            days: days_from_civil(y, m, d),
        })
    }

    /// The UTC date of a Unix time in seconds.
    pub fn from_unix_seconds(seconds: i64) -> Date {
        Date {
            days: seconds.div_euclid(86_400),
        }
    }

    pub fn plus_days(self, days: i64) -> Date {
        Date {
            days: self.days + days,
        }
    }

    pub fn days_until(self, later: Date) -> i64 {
        later.days - self.days
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = civil_from_days(self.days);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days-from-civil / civil-from-days (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Parses a date in any accepted form: `YYYY-MM-DD`, RFC 3339 (`2027-01-31T23:00:00-02:00`,
/// taken as its UTC day), HTTP-date (`Sun, 31 Jan 2027 23:59:59 GMT`) or an RFC 9745
/// structured date (`@1801439999`, Unix seconds).
pub fn parse_date(text: &str) -> Option<Date> {
    let text = text.trim();
    if let Some(seconds) = text.strip_prefix('@') {
        if seconds.is_empty()
            || !seconds
                .bytes()
                .enumerate()
                .all(|(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-'))
        {
            return None;
        }
        let seconds: i64 = seconds.parse().ok()?;
        return Some(Date::from_unix_seconds(seconds));
    }
    if text.len() == 10 {
        return Date::parse(text);
    }
    if text.len() > 10 && matches!(text.as_bytes().get(10), Some(b'T' | b't')) {
        return parse_rfc3339(text);
    }
    parse_http_date(text)
}

fn digits(text: &str) -> Option<i64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `HH:MM:SS` → seconds, each part in range (a leap second's `60` allowed).
fn time_of_day(text: &str) -> Option<i64> {
    let mut parts = text.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || h.len() != 2 || m.len() != 2 || s.len() != 2 {
        return None;
    }
    let (h, m, s) = (digits(h)?, digits(m)?, digits(s)?);
    (h < 24 && m < 60 && s <= 60).then_some(h * 3600 + m * 60 + s)
}

/// RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, as its UTC day.
fn parse_rfc3339(text: &str) -> Option<Date> {
    let day = Date::parse(text.get(..10)?)?;
    let rest = text.get(11..)?;
    let time = rest.get(..8)?;
    let mut seconds = time_of_day(time)?;
    let mut tail = rest.get(8..)?;
    if let Some(frac) = tail.strip_prefix('.') {
        let end = frac
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(frac.len());
        if end == 0 {
            return None;
        }
        tail = frac.get(end..)?;
    }
    let offset = match tail {
        "Z" | "z" => 0,
        _ => {
            let sign = match tail.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = tail.get(1..)?;
            let (h, m) = hm.split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            let (h, m) = (digits(h)?, digits(m)?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 3600 + m * 60)
        }
    };
    seconds -= offset;
    Some(Date::from_unix_seconds(day.days * 86_400 + seconds))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (the weekday must match the day).
fn parse_http_date(text: &str) -> Option<Date> {
    let (weekday, rest) = text.split_once(", ")?;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [d, mon, y, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    if d.len() != 2 || y.len() != 4 {
        return None;
    }
    let month = MONTHS.iter().position(|m| m == mon)? + 1;
    let day = Date::parse(&format!("{y}-{month:02}-{d}"))?;
    time_of_day(time)?;
    let expected = WEEKDAYS[usize::try_from(day.days.rem_euclid(7)).ok()?];
    (weekday == expected).then_some(day)
}

/// A stability level (`x-stability-level`), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stability {
    Draft,
    Alpha,
    Beta,
    Stable,
}

impl Stability {
    pub const ALL: [Stability; 4] = [
        Stability::Draft,
        Stability::Alpha,
        Stability::Beta,
        Stability::Stable,
    ];

    pub fn parse(text: &str) -> Option<Stability> {
        Stability::ALL.into_iter().find(|s| s.as_str() == text)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Stability::Draft => "draft",
            Stability::Alpha => "alpha",
            Stability::Beta => "beta",
            Stability::Stable => "stable",
        }
    }

    /// The level an extension value states: missing is `stable`; `Err` holds a value that
    /// names no level.
    pub fn of(value: Option<&Value>) -> Result<Stability, String> {
        match value {
            None => Ok(Stability::Stable),
            Some(Value::String(s)) => Stability::parse(s).ok_or_else(|| s.clone()),
            Some(other) => Err(other.to_string()),
        }
    }
}

/// A declared date: known, declared without one (a `Sunset` / `Deprecation` header whose
/// schema gives no date), or stated but unparsable (never read as "no date").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateFact {
    Known(Date),
    Unknown,
    Invalid(String),
}

impl DateFact {
    /// The fact of a stated value (a string in an accepted form, else invalid).
    pub fn of_value(value: &Value) -> DateFact {
        match value {
            Value::String(s) => {
                parse_date(s).map_or_else(|| DateFact::Invalid(s.clone()), DateFact::Known)
            }
            other => DateFact::Invalid(other.to_string()),
        }
    }

    pub fn known(&self) -> Option<Date> {
        match self {
            DateFact::Known(d) => Some(*d),
            _ => None,
        }
    }
}

/// How a sunset moved between two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SunsetChange {
    /// A sunset appeared (or a date became known where there was none or an unparsable one).
    Added,
    /// The date moved earlier.
    Advanced,
    /// The date moved later.
    Postponed,
    /// The sunset (or its date) is gone.
    Removed,
    /// The new reading states a date that does not parse.
    Invalid,
}

/// How the sunset moved from `old` to `new`; `None` when it did not.
pub fn sunset_change(old: Option<&DateFact>, new: Option<&DateFact>) -> Option<SunsetChange> {
    use DateFact::*;
    match (old, new) {
        (a, b) if a == b => None,
        (_, Some(Invalid(_))) => Some(SunsetChange::Invalid),
        (Some(Known(a)), Some(Known(b))) => Some(if b < a {
            SunsetChange::Advanced
        } else {
            SunsetChange::Postponed
        }),
        (Some(Known(_)), Some(Unknown) | None) | (Some(Unknown), None) => {
            Some(SunsetChange::Removed)
        }
        (Some(Invalid(_)), None) => Some(SunsetChange::Removed),
        (None | Some(Unknown) | Some(Invalid(_)), Some(Known(_)))
        | (None | Some(Invalid(_)), Some(Unknown)) => Some(SunsetChange::Added),
        (Some(Unknown), Some(Unknown)) | (None, None) => None,
    }
}

/// Whether a change of an endpoint's extension `key` is judged by the stability rules (so the
/// generic `extension-changed` stays silent for it): a stability level moving between two
/// known levels, or a sunset that moved.
pub fn judged_extension(key: &str, before: Option<&Value>, after: Option<&Value>) -> bool {
    match key {
        STABILITY_KEY => matches!(
            (Stability::of(before), Stability::of(after)),
            (Ok(a), Ok(b)) if a != b
        ),
        SUNSET_KEY => sunset_change(
            before.map(DateFact::of_value).as_ref(),
            after.map(DateFact::of_value).as_ref(),
        )
        .is_some(),
        _ => false,
    }
}

/// The stability and sunset facts of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFacts {
    /// Its level (`Err`: a stated value that names none).
    pub stability: Result<Stability, String>,
    pub deprecated: bool,
    /// `x-sunset`, else a declared `Sunset` response header.
    pub sunset: Option<DateFact>,
    /// A declared `Deprecation` response header.
    pub deprecation: Option<DateFact>,
}

impl EndpointFacts {
    /// The facts `endpoint` states; `definitions` resolves a header schema's `$ref`.
    pub fn of(endpoint: &EndpointSpec, definitions: &BTreeMap<String, Value>) -> EndpointFacts {
        let sunset = endpoint
            .extensions
            .get(SUNSET_KEY)
            .map(DateFact::of_value)
            .or_else(|| header_fact(endpoint, "sunset", definitions));
        let deprecation = header_fact(endpoint, "deprecation", definitions);
        EndpointFacts {
            stability: Stability::of(endpoint.extensions.get(STABILITY_KEY)),
            deprecated: endpoint.deprecated || deprecation.is_some() || odata_deprecated(endpoint),
            sunset,
            deprecation,
        }
    }

    /// The stability the policy reads (an unparsable level is read as `stable`: the most
    /// protected, so it never demotes a change).
    pub fn level(&self) -> Stability {
        self.stability.clone().unwrap_or(Stability::Stable)
    }
}

/// The date a declared response header `name` (lower case) gives in its schema's `const`,
/// `default` or `example` (first found, over the responses in status order): an unparsable one
/// wins (never silently no date), else the earliest; a header without a date is `Unknown`.
fn header_fact(
    endpoint: &EndpointSpec,
    name: &str,
    definitions: &BTreeMap<String, Value>,
) -> Option<DateFact> {
    let mut found: Option<DateFact> = None;
    for response in endpoint.responses.values() {
        let Some(schema) = response.headers.get(name) else {
            continue;
        };
        let schema = match schema.get("$ref").and_then(Value::as_str) {
            Some(target) => definitions.get(target).unwrap_or(schema),
            None => schema,
        };
        let fact = ["const", "default", "example"]
            .iter()
            .find_map(|k| schema.get(*k))
            .map_or(DateFact::Unknown, |v| match v {
                // RFC 9745 allows the structured date as an integer of seconds too.
                Value::Number(n) => n.as_i64().map_or_else(
                    || DateFact::Invalid(n.to_string()),
                    |s| DateFact::Known(Date::from_unix_seconds(s)),
                ),
                other => DateFact::of_value(other),
            });
        found = Some(match (found, fact) {
            (Some(DateFact::Invalid(t)), _) | (_, DateFact::Invalid(t)) => DateFact::Invalid(t),
            (Some(DateFact::Known(a)), DateFact::Known(b)) => DateFact::Known(a.min(b)),
            (Some(DateFact::Known(a)), DateFact::Unknown)
            | (Some(DateFact::Unknown), DateFact::Known(a))
            | (None, DateFact::Known(a)) => DateFact::Known(a),
            (Some(DateFact::Unknown) | None, DateFact::Unknown) => DateFact::Unknown,
        });
    }
    found
}

/// OData `Core.Revisions` with a record of kind `Deprecated` among the endpoint's annotations.
fn odata_deprecated(endpoint: &EndpointSpec) -> bool {
    let Some(annotations) = endpoint
        .meta
        .as_deref()
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    else {
        return false;
    };
    annotations.iter().any(|(term, value)| {
        let term = term.rsplit('/').next().unwrap_or(term);
        (term.ends_with("Core.V1.Revisions") || term.ends_with("Core.Revisions"))
            && has_deprecated_kind(value)
    })
}

/// Whether a `Core.Revisions` value holds a record of kind `Deprecated`: JSON CSDL
/// (`{"Kind": "Deprecated"}`) or the XML tree the normalizer keeps (a `PropertyValue` with
/// `Property="Kind"` and `EnumMember="Core.RevisionKind/Deprecated"`).
fn has_deprecated_kind(value: &Value) -> bool {
    let deprecated = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|k| k.rsplit(['/', '.', '#']).next() == Some("Deprecated"))
    };
    match value {
        Value::Object(map) => {
            deprecated(map.get("Kind"))
                || (map.get("Property").and_then(Value::as_str) == Some("Kind")
                    && deprecated(map.get("EnumMember")))
                || map.values().any(has_deprecated_kind)
        }
        Value::Array(items) => items.iter().any(has_deprecated_kind),
        _ => false,
    }
}

/// A watch's stability and sunset policy (`[policy]`, `[watch.policy]`), read against the
/// accepted (old) side only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SunsetPolicy {
    /// Changes to endpoints whose accepted stability is below this are `info`.
    pub min_stability: Option<Stability>,
    /// Removing an endpoint whose accepted sunset date has passed on the check date is
    /// compatible.
    pub allow_removal_after_sunset: bool,
    /// How many days before a sunset the daemon warns.
    pub sunset_warning_days: i64,
}

impl Default for SunsetPolicy {
    fn default() -> Self {
        SunsetPolicy {
            min_stability: None,
            allow_removal_after_sunset: false,
            sunset_warning_days: DEFAULT_SUNSET_WARNING_DAYS,
        }
    }
}

impl SunsetPolicy {
    /// Whether the policy can change a verdict (the warning alone does not).
    pub fn judges(&self) -> bool {
        self.min_stability.is_some() || self.allow_removal_after_sunset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn day(text: &str) -> Date {
        Date::parse(text).unwrap()
    }

    #[test]
    fn every_accepted_date_form_parses_to_its_utc_day() {
        for (text, expected) in [
            ("2027-01-31", "2027-01-31"),
            ("2027-01-31T23:59:59Z", "2027-01-31"),
            ("2027-01-31T23:00:00-02:00", "2027-02-01"),
            ("2027-02-01T01:00:00.250+02:00", "2027-01-31"),
            ("Sun, 31 Jan 2027 23:59:59 GMT", "2027-01-31"),
            ("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06"),
            ("@1801439999", "2027-01-31"),
            ("@0", "1970-01-01"),
        ] {
            assert_eq!(parse_date(text), Some(day(expected)), "{text}");
        }
        for bad in [
            "",
            "2027-02-30",
            "31/01/2027",
            "2027-01-31T24:00:00Z",
            "2027-01-31T23:59:59",
            "2027-01-31T23:59:59.Z",
            "Mon, 31 Jan 2027 23:59:59 GMT",
            "Sun, 31 Jan 2027 23:59:59 UTC",
            "Sunday, 31-Jan-27 23:59:59 GMT",
            "@",
            "@12a",
            "soon",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn stability_levels_order_and_missing_is_stable() {
        assert!(Stability::Draft < Stability::Alpha);
        assert!(Stability::Beta < Stability::Stable);
        assert_eq!(Stability::of(None), Ok(Stability::Stable));
        assert_eq!(Stability::of(Some(&json!("beta"))), Ok(Stability::Beta));
        assert_eq!(Stability::of(Some(&json!("gamma"))), Err("gamma".into()));
    }

    #[test]
    fn sunset_moves_are_directed() {
        let k = |t: &str| DateFact::Known(day(t));
        let a = k("2027-01-01");
        let b = k("2027-06-01");
        let bad = DateFact::Invalid("soon".into());
        assert_eq!(sunset_change(None, Some(&a)), Some(SunsetChange::Added));
        assert_eq!(
            sunset_change(Some(&b), Some(&a)),
            Some(SunsetChange::Advanced)
        );
        assert_eq!(
            sunset_change(Some(&a), Some(&b)),
            Some(SunsetChange::Postponed)
        );
        assert_eq!(sunset_change(Some(&a), None), Some(SunsetChange::Removed));
        assert_eq!(
            sunset_change(Some(&a), Some(&bad)),
            Some(SunsetChange::Invalid)
        );
        assert_eq!(sunset_change(None, Some(&bad)), Some(SunsetChange::Invalid));
        assert_eq!(sunset_change(Some(&a), Some(&a)), None);
        assert_eq!(
            sunset_change(None, Some(&DateFact::Unknown)),
            Some(SunsetChange::Added)
        );
        assert!(judged_extension(
            SUNSET_KEY,
            None,
            Some(&json!("2027-01-01"))
        ));
        assert!(!judged_extension(
            SUNSET_KEY,
            Some(&json!("2027-01-01")),
            Some(&json!("2027-01-01T10:00:00Z"))
        ));
        assert!(judged_extension(STABILITY_KEY, None, Some(&json!("beta"))));
        assert!(!judged_extension(
            STABILITY_KEY,
            None,
            Some(&json!("gamma"))
        ));
        assert!(!judged_extension("x-other", None, Some(&json!("beta"))));
    }

    #[test]
    fn graphql_deprecated_and_odata_revisions_are_deprecations() {
        use crate::core::normalize::{graphql, odata};
        let spec = graphql::normalize(
            "acme.graph",
            b"type Query { old: Int @deprecated(reason: \"use new\") new: Int }",
        )
        .unwrap();
        let deprecated: Vec<(&str, bool)> = spec
            .endpoints
            .iter()
            .map(|e| {
                (
                    e.name.as_str(),
                    EndpointFacts::of(e, &spec.definitions).deprecated,
                )
            })
            .collect();
        assert_eq!(deprecated, [("new", false), ("old", true)]);
        let csdl = r#"<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
<edmx:Reference Uri="https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Core.V1.xml"><edmx:Include Namespace="Org.OData.Core.V1" Alias="Core"/></edmx:Reference>
<edmx:DataServices><Schema Namespace="d" xmlns="http://docs.oasis-open.org/odata/ns/edm">
<EntityType Name="Order"><Key><PropertyRef Name="Id"/></Key><Property Name="Id" Type="Edm.Int32" Nullable="false"/></EntityType>
<Function Name="Top"><ReturnType Type="Collection(d.Order)"/>
  <Annotation Term="Core.Revisions"><Collection><Record>
    <PropertyValue Property="Version" String="2"/>
    <PropertyValue Property="Kind" EnumMember="Core.RevisionKind/Deprecated"/>
    <PropertyValue Property="Description" String="use Orders"/>
  </Record></Collection></Annotation>
</Function>
<Function Name="Bottom"><ReturnType Type="Collection(d.Order)"/></Function>
<EntityContainer Name="C">
  <EntitySet Name="Orders" EntityType="d.Order"/>
  <FunctionImport Name="Top" Function="d.Top" EntitySet="Orders"/>
  <FunctionImport Name="Bottom" Function="d.Bottom" EntitySet="Orders"/>
</EntityContainer>
</Schema></edmx:DataServices></edmx:Edmx>"#;
        let spec = odata::normalize("acme.odata", csdl.as_bytes()).unwrap();
        let deprecated: Vec<&str> = spec
            .endpoints
            .iter()
            .filter(|e| EndpointFacts::of(e, &spec.definitions).deprecated)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(deprecated, ["Top"], "{:?}", spec.endpoints);
    }
}
