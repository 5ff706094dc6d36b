//! The pure core on real documents: every kind's normalizer and drift rules on the vendored
//! corpus (`tests/corpus/`) and against real peers (MCP servers, graphql-inspector), golden
//! fingerprint vectors, property tests and known-breaking mutations.

#[path = "../common/mod.rs"]
mod common;

mod completeness;
mod corpus;
mod corpus_facts;
mod fingerprint_golden;
mod graphql;
mod mcp;
mod mutations;
mod properties;
mod rpc;
mod streaming;
