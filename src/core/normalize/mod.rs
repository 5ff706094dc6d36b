//! Normalizers: pure functions from document bytes to a canonical [`ToolSpec`].

pub mod allow_list;
mod database;
pub mod graphql;
pub mod mcp;
pub mod odata;
pub mod openapi;
pub mod openapi_refs;
pub mod openrpc;
pub mod optimade;
pub mod postgres;
pub mod schema;
pub mod source;
pub mod sqlite;

use crate::core::json::ParseError;
use crate::core::model::{Kind, ToolSpec};

/// Why a document could not be turned into a contract. Messages name the problem and where
/// it is in the document, never secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("not an OpenAPI document: {0}")]
    NotOpenApi(String),
    #[error("unsupported OpenAPI version {0:?} (supported: Swagger 2.0, OpenAPI 3.0 and 3.1)")]
    UnsupportedVersion(String),
    #[error("{at}: {problem}")]
    Invalid { at: String, problem: String },
    #[error("unresolved $ref {reference:?} at {at}")]
    UnresolvedRef { reference: String, at: String },
    #[error("$ref chain too long or cyclic at {0}")]
    RefLoop(String),
    #[error("two operations share the identity {0:?} (paths that differ only in parameter names)")]
    DuplicateEndpoint(String),
}

/// Splits a watch name `namespace.name` at its first dot (no dot: empty namespace).
pub fn split_watch_name(watch: &str) -> (String, String) {
    match watch.split_once('.') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), watch.to_string()),
    }
}

/// Normalizes a document of the given kind into the canonical model.
pub fn normalize(kind: Kind, watch: &str, bytes: &[u8]) -> Result<ToolSpec, NormalizeError> {
    match kind {
        Kind::Openapi => openapi::normalize(watch, bytes),
        Kind::Graphql => graphql::normalize(watch, bytes),
        Kind::Openrpc => openrpc::normalize(watch, bytes),
        Kind::Odata => odata::normalize(watch, bytes),
        Kind::Optimade => optimade::normalize(watch, bytes),
        Kind::Mcp => mcp::normalize(watch, bytes),
        Kind::Sqlite => sqlite::normalize(watch, bytes),
        Kind::Postgres => postgres::normalize(watch, bytes),
    }
}
