//! The pure core: no I/O, no clocks, no randomness. Same input, same bytes out.

pub mod change_kind;
pub mod diff;
pub mod event;
pub mod fingerprint;
pub mod gateway;
pub mod hidden;
pub mod inert;
pub mod json;
pub mod kinds;
pub mod locate;
pub mod model;
pub mod normalize;
pub mod report;
pub mod scope;
pub mod small_map;
pub mod sunset;
