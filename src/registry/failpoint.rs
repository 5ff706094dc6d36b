//! Failpoints on the registry write path, for the crash-safety tests (docs/reliability.md,
//! matrix C2). Only debug builds read `SCHEMAWATCH_FAILPOINT=<name>=<action>[,...]`, where
//! `<action>` is `abort` (the process dies on the spot, like kill -9: nothing is rolled back
//! by us), `panic` (unwinds: the open transaction is dropped and rolled back) or `error`
//! (the write returns `RegistryError::Failpoint`). Release builds compile every failpoint to
//! nothing and never read the variable.
//!
//! Names, in write order: `apply.begin`, `apply.after_snapshot`, `apply.after_state`,
//! `apply.after_commit`; `review.begin`, `review.after_insert`, `review.before_commit`,
//! `review.after_commit`; `accept.after_apply`, `accept.before_commit`, `accept.after_commit`;
//! `unchanged.before_commit`. Not in [`NAMES`] (the crash suite drives refreshes):
//! `copy.before_commit` (`registry copy`, every row written, tested by its own tests).

use super::RegistryError;

/// Every failpoint name (the tests iterate over them).
pub const NAMES: &[&str] = &[
    "apply.begin",
    "apply.after_snapshot",
    "apply.after_state",
    "apply.after_commit",
    "review.begin",
    "review.after_insert",
    "review.before_commit",
    "review.after_commit",
    "accept.after_apply",
    "accept.before_commit",
    "accept.after_commit",
    "unchanged.before_commit",
];

#[cfg(debug_assertions)]
// The `panic` action exists to unwind mid-write (crash-safety tests); debug builds only.
#[allow(clippy::panic)]
pub(crate) fn hit(name: &'static str) -> Result<(), RegistryError> {
    let Ok(spec) = std::env::var("SCHEMAWATCH_FAILPOINT") else {
        return Ok(());
    };
    for item in spec.split(',') {
        match item.trim().split_once('=') {
            Some((n, "abort")) if n == name => std::process::abort(),
            Some((n, "panic")) if n == name => panic!("failpoint {name}"),
            Some((n, "error")) if n == name => return Err(RegistryError::Failpoint(name)),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub(crate) fn hit(_name: &'static str) -> Result<(), RegistryError> {
    Ok(())
}
