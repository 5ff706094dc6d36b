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

/// Whether `fact`'s endpoint is in `uses` (by name, operationId or identity; no scope: yes).
pub fn in_scope(fact: &SunsetFact, uses: Option<&Uses>) -> bool {
    uses.is_none_or(|uses| {
        uses.entries.contains(&fact.endpoint)
            || uses.entries.contains(&fact.identity)
            || fact
                .operation_id
                .as_ref()
                .is_some_and(|id| uses.entries.contains(id))
    })
}

/// The known sunset day of `fact`.
fn day(fact: &SunsetFact) -> Option<Date> {
    fact.sunset.as_deref().and_then(Date::parse)
}

/// `watch`'s in-scope facts with a known sunset, earliest first (`facts` may hold other
/// watches'; it is `Registry::sunsets`, sorted by watch).
pub fn dated<'f>(watch: &WatchConfig, facts: &'f [SunsetFact]) -> Vec<(Date, &'f SunsetFact)> {
    let mine: Vec<&SunsetFact> = facts.iter().filter(|f| f.watch == watch.name).collect();
    if mine.is_empty() {
        return Vec::new();
    }
    let uses = scope_of(watch);
    let mut out: Vec<(Date, &SunsetFact)> = mine
        .into_iter()
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
