//! The reliability suite (docs/reliability.md): the fault catalogue and the kill -9 loop, each
//! scenario checked by the invariant oracle.

#[path = "../common/mod.rs"]
mod common;

mod crash;
mod faults;
mod oracle;
