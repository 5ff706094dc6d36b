//! The canonical contract model: ToolSpec, EndpointSpec and the drift report types.
//! Field names are the product contract (DESIGN.md); keep them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The kinds of contract schemawatch watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Openapi,
    Openrpc,
    Odata,
    Graphql,
    Mcp,
    Optimade,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Openapi,
        Kind::Openrpc,
        Kind::Odata,
        Kind::Graphql,
        Kind::Mcp,
        Kind::Optimade,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Openapi => "openapi",
            Kind::Openrpc => "openrpc",
            Kind::Odata => "odata",
            Kind::Graphql => "graphql",
            Kind::Mcp => "mcp",
            Kind::Optimade => "optimade",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The canonical contract of one watched source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub namespace: String,
    pub name: String,
    pub kind: Kind,
    /// What changes the invocation target (base URLs, transport). Inside the fingerprint.
    pub remote: Remote,
    /// Where the contract came from. Outside the fingerprint.
    pub evidence: Evidence,
    /// Descriptive metadata (document title, version string). Outside the fingerprint.
    pub metadata: Metadata,
    /// Endpoints sorted by identity (`METHOD path` for HTTP kinds).
    pub endpoints: Vec<EndpointSpec>,
    /// Named schema definitions reachable through `$ref`, keyed by their JSON pointer
    /// (`#/components/schemas/Pet`). Each endpoint's fingerprint covers the ones it reaches.
    pub definitions: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Remote {
    /// Base URLs (OpenAPI `servers`, Swagger `schemes://host/basePath`), sorted.
    pub base_urls: Vec<String>,
    pub transport: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    pub source_type: String,
    pub license: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    pub title: Option<String>,
    pub version: Option<String>,
    pub format: Option<String>,
}

/// One callable operation of a contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// operationId when present, else `METHOD path`.
    pub name: String,
    /// HTTP verb (upper case), or CALL, QUERY, MUTATION, SUBSCRIPTION, FUNCTION, ACTION, TOOL.
    pub method: String,
    /// Path template with parameter names normalized to `{}` for identity.
    pub path: String,
    /// The path template as written (parameter names kept).
    pub path_template: String,
    pub operation_id: Option<String>,
    pub description: Option<String>,
    pub deprecated: bool,
    pub aliases: Vec<String>,
    /// Sorted by (location, name).
    pub parameters: Vec<ParameterSpec>,
    pub request_body: Option<RequestBody>,
    /// Keyed by status code (`200`, `4XX`, `default`).
    pub responses: BTreeMap<String, ResponseSpec>,
    /// Security requirements in effect: alternatives, each a sorted list of `scheme[:scopes]`.
    pub security: Vec<Vec<String>>,
    /// What a caller sends, as one JSON Schema (kinds without HTTP parameters use this).
    pub input_schema: Option<Value>,
    /// What a caller receives on success, as one JSON Schema.
    pub output_schema: Option<Value>,
    pub read_only: bool,
    pub destructive: bool,
}

impl EndpointSpec {
    /// The matching identity of an HTTP-like endpoint: `METHOD path`.
    pub fn identity(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterSpec {
    pub name: String,
    /// `path`, `query`, `header`, `cookie`.
    pub location: String,
    pub required: bool,
    pub description: Option<String>,
    pub deprecated: bool,
    /// Serialization details (style, explode, allowReserved, content media type), if stated.
    pub style: BTreeMap<String, Value>,
    pub schema: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestBody {
    pub required: bool,
    pub description: Option<String>,
    /// Media type → schema.
    pub content: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    pub description: Option<String>,
    /// Media type → schema.
    pub content: BTreeMap<String, Value>,
    /// Header name (lower case) → schema.
    pub headers: BTreeMap<String, Value>,
}

/// How severe one change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Compatible,
    Breaking,
    Security,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Compatible => "compatible",
            Severity::Breaking => "breaking",
            Severity::Security => "security",
        }
    }

    pub fn parse(text: &str) -> Option<Severity> {
        [
            Severity::Info,
            Severity::Compatible,
            Severity::Breaking,
            Severity::Security,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// The verdict of a whole report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compatibility {
    Identical,
    Compatible,
    Breaking,
    SecurityReview,
}

impl Compatibility {
    pub fn as_str(self) -> &'static str {
        match self {
            Compatibility::Identical => "identical",
            Compatibility::Compatible => "compatible",
            Compatibility::Breaking => "breaking",
            Compatibility::SecurityReview => "security_review",
        }
    }

    pub fn parse(text: &str) -> Option<Compatibility> {
        [
            Compatibility::Identical,
            Compatibility::Compatible,
            Compatibility::Breaking,
            Compatibility::SecurityReview,
        ]
        .into_iter()
        .find(|c| c.as_str() == text)
    }

    /// The report level that one change of this severity forces.
    pub fn from_severity(severity: Severity) -> Compatibility {
        match severity {
            Severity::Info | Severity::Compatible => Compatibility::Compatible,
            Severity::Breaking => Compatibility::Breaking,
            Severity::Security => Compatibility::SecurityReview,
        }
    }
}

impl fmt::Display for Compatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One classified difference between two contracts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// Dotted location, e.g. `endpoints.listPets.parameters.query.limit.schema.maximum`.
    pub path: String,
    /// What happened, e.g. `parameter_added`.
    pub kind: String,
    /// The id of the rule that judged it.
    pub rule: String,
    pub severity: Severity,
    pub before: Option<ValueOrd>,
    pub after: Option<ValueOrd>,
    /// One plain-English sentence.
    pub message: String,
}

/// A JSON value with a total order (by canonical text), so changes sort deterministically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ValueOrd(pub Value);

impl PartialOrd for ValueOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ValueOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        crate::core::json::to_canonical_string(&self.0)
            .cmp(&crate::core::json::to_canonical_string(&other.0))
    }
}

/// The result of comparing two contracts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftReport {
    pub compatibility: Compatibility,
    pub old_fingerprint: String,
    pub new_fingerprint: String,
    pub changes: Vec<Change>,
}

impl DriftReport {
    /// Number of changes a reviewer must look at (everything but info).
    pub fn change_count(&self) -> usize {
        self.changes.len()
    }
}
