//! Pairing: which endpoint of the old contract is which of the new one ([`match_endpoints`]),
//! which entry of a keyed map is which ([`by_key`]: media types, response statuses and
//! headers), and which parameter is which ([`parameters`]: by location and name, path
//! parameters renamed in place). The classifier and the families get matched (old, new) pairs and unmatched sides
//! from here, so no family re-writes the matching.

use crate::core::model::{EndpointSpec, ParameterSpec, SmallMap};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One side or both of an endpoint the comparison looks at.
pub enum EndpointPair<'a> {
    /// The same endpoint on both sides, and it differs.
    Matched(&'a EndpointSpec, &'a EndpointSpec),
    Removed(&'a EndpointSpec),
    Added(&'a EndpointSpec),
}

/// Matches by `METHOD path` first, then pairs leftovers by operationId (so a method or path
/// change of the same operation is one endpoint that changed, not a removal plus an addition).
/// A pair `same(old position, new position)` calls equal is left out. The identity is never
/// spelled as a string: matching a 200,000-endpoint pair held two maps of 200,000 keys.
pub fn match_endpoints<'a>(
    old: &'a [Arc<EndpointSpec>],
    new: &'a [Arc<EndpointSpec>],
    same: &dyn Fn(usize, usize) -> bool,
) -> Vec<EndpointPair<'a>> {
    let identity = |e: &'a EndpointSpec| (e.method.as_str(), e.path.as_str());
    // Of endpoints sharing one identity, the last is the one matched (as a map keeps).
    let new_by_identity: HashMap<(&str, &str), usize> = new
        .iter()
        .enumerate()
        .map(|(i, e)| (identity(e), i))
        .collect();
    let mut pairs = Vec::new();
    // By the position `new_by_identity` holds for the identity: every endpoint of a matched
    // identity is matched.
    let mut matched_new = vec![false; new.len()];
    let mut old_left = Vec::new();
    for (i, o) in old.iter().enumerate() {
        match new_by_identity.get(&identity(o)) {
            Some(&j) => {
                matched_new[j] = true;
                if !same(i, j) {
                    pairs.push(EndpointPair::Matched(o, &new[j]));
                }
            }
            None => old_left.push(o),
        }
    }
    let mut new_left_by_op: BTreeMap<&str, &EndpointSpec> = BTreeMap::new();
    let mut new_left = Vec::new();
    for n in new.iter().filter(|n| {
        !new_by_identity
            .get(&identity(n))
            .is_some_and(|&j| matched_new[j])
    }) {
        match &n.operation_id {
            Some(op) => {
                new_left_by_op.insert(op.as_str(), n);
            }
            None => new_left.push(&**n),
        }
    }
    for o in old_left {
        match o
            .operation_id
            .as_deref()
            .and_then(|op| new_left_by_op.remove(op))
        {
            Some(n) => pairs.push(EndpointPair::Matched(o, n)),
            None => pairs.push(EndpointPair::Removed(o)),
        }
    }
    new_left.extend(new_left_by_op.into_values());
    pairs.extend(new_left.into_iter().map(EndpointPair::Added));
    pairs
}

/// One key of two maps the rules compare (media types, response statuses, response headers):
/// on both sides, or on one.
pub enum Keyed<'a, K, V> {
    Both(&'a K, &'a V, &'a V),
    Removed(&'a K, &'a V),
    Added(&'a K, &'a V),
}

/// Pairs two maps by key, in key order (both are sorted by key: one merge of the two walks).
pub fn by_key<'a, K: Ord, V>(
    old: &'a SmallMap<K, V>,
    new: &'a SmallMap<K, V>,
) -> Vec<Keyed<'a, K, V>> {
    let mut out = Vec::new();
    let (mut o, mut n) = (old.iter().peekable(), new.iter().peekable());
    loop {
        let next = match (o.peek(), n.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((ok, _)), Some((nk, _))) => ok.cmp(nk),
        };
        match next {
            Ordering::Less => {
                if let Some((k, v)) = o.next() {
                    out.push(Keyed::Removed(k, v));
                }
            }
            Ordering::Greater => {
                if let Some((k, v)) = n.next() {
                    out.push(Keyed::Added(k, v));
                }
            }
            Ordering::Equal => {
                if let (Some((k, a)), Some((_, b))) = (o.next(), n.next()) {
                    out.push(Keyed::Both(k, a, b));
                }
            }
        }
    }
    out
}

/// The parameters of two matched endpoints, paired: by (location, name), and a path
/// parameter renamed in place (same template position, required and serialized alike) is one
/// parameter under its new name.
pub struct ParameterPairs<'a> {
    /// Path parameters renamed in place: old name → new name.
    pub renamed: BTreeMap<String, String>,
    /// Every old parameter, in (location, name) order, with its counterpart if it has one.
    pub old: Vec<(&'a ParameterSpec, Option<&'a ParameterSpec>)>,
    /// New parameters with no old counterpart, in (location, name) order.
    pub added: Vec<&'a ParameterSpec>,
    /// New parameters kept under their (location, name): the ones callers already send.
    pub kept_by_key: Vec<&'a ParameterSpec>,
}

/// Pairs the parameters of two endpoints (with their path templates, for in-place renames).
pub fn parameters<'a>(
    (old, old_template): (&'a [ParameterSpec], &str),
    (new, new_template): (&'a [ParameterSpec], &str),
) -> ParameterPairs<'a> {
    let key = |p: &'a ParameterSpec| (p.location.as_str(), p.name.as_str());
    let old_by: BTreeMap<_, _> = old.iter().map(|p| (key(p), p)).collect();
    let new_by: BTreeMap<_, _> = new.iter().map(|p| (key(p), p)).collect();
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    for (from, to) in renamed_in_place(old_template, new_template) {
        if let (Some(o), Some(n)) = (old_by.get(&("path", &*from)), new_by.get(&("path", &*to))) {
            if o.required == n.required
                && o.style == n.style
                && !new_by.contains_key(&("path", &*from))
                && !old_by.contains_key(&("path", &*to))
            {
                renamed.insert(from, to);
            }
        }
    }
    let old_pairs = old_by
        .iter()
        .map(|(k, o)| {
            let counterpart = match renamed.get(k.1).filter(|_| k.0 == "path") {
                Some(to) => new_by.get(&("path", to.as_str())),
                None => new_by.get(k),
            };
            (*o, counterpart.copied())
        })
        .collect();
    let added = new_by
        .iter()
        .filter(|(k, _)| {
            let renamed_to = k.0 == "path" && renamed.values().any(|to| to == k.1);
            !(old_by.contains_key(*k) || renamed_to)
        })
        .map(|(_, n)| *n)
        .collect();
    let kept_by_key = new
        .iter()
        .filter(|p| old_by.contains_key(&key(p)))
        .collect();
    ParameterPairs {
        renamed,
        old: old_pairs,
        added,
        kept_by_key,
    }
}

/// The parameter names of a path template, in order (`/a/{x}/b/{y}` → `[x, y]`).
fn template_names(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        names.push(&rest[start + 1..start + len]);
        rest = &rest[start + len + 1..];
    }
    names
}

/// Path parameters renamed in place: old name → new name, for templates that are the same
/// but for the names (the endpoint's identity, `/pets/{}`, is then the same too).
pub fn renamed_in_place(old_template: &str, new_template: &str) -> BTreeMap<String, String> {
    let (old_names, new_names) = (template_names(old_template), template_names(new_template));
    let mut out = BTreeMap::new();
    if old_names.len() != new_names.len() {
        return out;
    }
    let strip = |t: &str, names: &[&str]| {
        let mut t = t.to_string();
        for n in names {
            t = t.replacen(&format!("{{{n}}}"), "{}", 1);
        }
        t
    };
    if strip(old_template, &old_names) != strip(new_template, &new_names) {
        return out;
    }
    for (o, n) in old_names.iter().zip(&new_names) {
        if o != n && !old_names.contains(n) && !new_names.contains(o) {
            out.insert(o.to_string(), n.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_key_pairs_every_key_once_in_key_order() {
        let old: SmallMap<String, u8> = [("a", 1), ("b", 2), ("d", 4)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let new: SmallMap<String, u8> = [("b", 3), ("c", 3), ("d", 4)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let seen: Vec<String> = by_key(&old, &new)
            .into_iter()
            .map(|k| match k {
                Keyed::Both(k, a, b) => format!("{k}:{a}={b}"),
                Keyed::Removed(k, a) => format!("-{k}:{a}"),
                Keyed::Added(k, b) => format!("+{k}:{b}"),
            })
            .collect();
        assert_eq!(seen, ["-a:1", "b:2=3", "+c:3", "d:4=4"]);
    }
}
