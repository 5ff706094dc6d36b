//! Pairing: which endpoint of the old contract is which of the new one. The classifier hands
//! the rules matched pairs and unmatched sides, so no family matches endpoints itself.

use crate::core::model::EndpointSpec;
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
