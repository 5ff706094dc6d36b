//! Which stored sunsets concern a watch (issue 31, item 3): the facts of its accepted contract
//! (`Registry::sunsets`, no document decoded) in its consumer scope, the next one, and those
//! within its `sunset_warning` of the check date (`sunset_approaching`).

use crate::config::WatchConfig;
use crate::core::scope::Uses;
use crate::core::sunset::Date;
use crate::registry::SunsetFact;

/// The watch's scope, when it has one; a scope that cannot be read now is no scope (every
/// sunset concerns the watch: an alert too many rather than one missed).
pub fn scope_of(watch: &WatchConfig) -> Option<Uses> {
    let source = watch.uses.as_ref()?;
    super::uses::read_uses(source, Some(&watch.name)).ok()
}

/// Whether `fact`'s endpoint is in `uses` (by name, operationId or identity, as the scope
/// names endpoints; no scope: yes).
pub fn in_scope(fact: &SunsetFact, uses: Option<&Uses>) -> bool {
    uses.is_none_or(|uses| {
        uses.entries.iter().any(|entry| {
            crate::core::scope::names(
                entry,
                &fact.endpoint,
                fact.operation_id.as_deref(),
                &fact.identity,
            )
        })
    })
}

/// The known sunset day of `fact`.
fn day(fact: &SunsetFact) -> Option<Date> {
    fact.sunset.as_deref().and_then(Date::parse)
}

/// The facts of `watch` in `facts`, sorted by watch as `Registry::sunsets` answers them: a
/// binary search, so a listing's rows each cost O(log facts), not a scan.
pub fn of_watch<'f>(facts: &'f [SunsetFact], watch: &str) -> &'f [SunsetFact] {
    let start = facts.partition_point(|f| f.watch.as_str() < watch);
    let end = start + facts[start..].partition_point(|f| f.watch == watch);
    &facts[start..end]
}

/// `watch`'s in-scope facts with a known sunset, earliest first (`facts` may hold other
/// watches'; it is `Registry::sunsets` or `Registry::sunsets_of`, sorted by watch).
pub fn dated<'f>(watch: &WatchConfig, facts: &'f [SunsetFact]) -> Vec<(Date, &'f SunsetFact)> {
    let mine = of_watch(facts, &watch.name);
    if mine.is_empty() {
        return Vec::new();
    }
    let uses = scope_of(watch);
    let mut out: Vec<(Date, &SunsetFact)> = mine
        .iter()
        .filter(|f| in_scope(f, uses.as_ref()))
        .filter_map(|f| day(f).map(|d| (d, f)))
        .collect();
    out.sort_by(|a, b| (a.0, &a.1.endpoint).cmp(&(b.0, &b.1.endpoint)));
    out
}

/// The next in-scope sunset of `watch` on or after `today`: (endpoint, date).
pub fn next_sunset(
    watch: &WatchConfig,
    facts: &[SunsetFact],
    today: Date,
) -> Option<(String, String)> {
    dated(watch, facts)
        .into_iter()
        .find(|(d, _)| *d >= today)
        .map(|(d, f)| (f.endpoint.clone(), d.to_string()))
}

/// The in-scope sunsets of `watch` within its `sunset_warning` of `today` (not yet passed).
pub fn approaching<'f>(
    watch: &WatchConfig,
    facts: &'f [SunsetFact],
    today: Date,
) -> Vec<&'f SunsetFact> {
    let warning = watch.policy.sunset_warning_days;
    dated(watch, facts)
        .into_iter()
        .filter(|(d, _)| *d >= today && d.plus_days(-warning) <= today)
        .map(|(_, f)| f)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(watch: &str, endpoint: &str) -> SunsetFact {
        SunsetFact {
            watch: watch.into(),
            version: 1,
            endpoint: endpoint.into(),
            operation_id: None,
            identity: format!("GET /{endpoint}"),
            deprecated: true,
            sunset: Some("2027-01-31".into()),
            sunset_state: Some("known".into()),
        }
    }

    /// A watch's facts are found by binary search in the sorted listing, whatever comes
    /// before and after it, including a watch whose name is a prefix of another's.
    #[test]
    fn of_watch_finds_exactly_one_watchs_facts() {
        let facts = vec![
            fact("acme", "a"),
            fact("acme.pets", "a"),
            fact("acme.pets", "b"),
            fact("acme.pets2", "a"),
            fact("zeta", "a"),
        ];
        let names = |w: &str| -> Vec<(String, String)> {
            of_watch(&facts, w)
                .iter()
                .map(|f| (f.watch.clone(), f.endpoint.clone()))
                .collect()
        };
        assert_eq!(
            names("acme.pets"),
            [
                ("acme.pets".into(), "a".into()),
                ("acme.pets".into(), "b".into())
            ]
        );
        assert_eq!(names("acme").len(), 1);
        assert_eq!(names("acme.pets2").len(), 1);
        assert!(names("acme.p").is_empty());
        assert!(names("zz").is_empty());
        assert!(names("").is_empty());
    }
}
