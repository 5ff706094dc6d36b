//! Pairing: which endpoint of the old contract is which of the new one ([`match_endpoints`]),
//! and which entry of a keyed map is which ([`by_key`]: media types, response statuses and
//! headers). The classifier and the families get matched (old, new) pairs and unmatched sides
//! from here, so no family re-writes the matching.

use crate::core::model::{EndpointSpec, SmallMap};
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
