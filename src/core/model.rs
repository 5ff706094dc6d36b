//! The canonical contract model: ToolSpec, EndpointSpec and the drift report types.
//! Field names are the product contract (docs/design.md); keep them.

use crate::core::change_kind::ChangeKind;
pub use crate::core::small_map::SmallMap;
/// A string of up to 24 bytes held inline (no allocation), longer ones on the heap; serialized
/// exactly as a `String`. The model's endpoints hold it for their short texts.
pub use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The kinds of contract, each declared once in `core::kinds`.
pub use crate::core::kinds::Kind;

/// The canonical contract of one watched source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    /// What the server declares it can do (MCP `capabilities`), verbatim. Inside the
    /// fingerprint when known; `None` means unknown (not "none"), and keeps the projection of
    /// every contract that never had them unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Value>,
    /// Named schema definitions reachable through `$ref`, keyed by their JSON pointer
    /// (`#/components/schemas/Pet`). Each endpoint's fingerprint covers the ones it reaches.
    pub definitions: BTreeMap<String, Value>,
    /// Directive definitions (GraphQL `directive @name(args) on LOCATIONS`), by name: each
    /// `{"arguments": {name: {"type", "default"?}}, "locations": [..], "repeatable": bool}`.
    /// Inside the fingerprint when not empty, so every contract without them keeps its
    /// fingerprint.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub directives: BTreeMap<String, Value>,
    /// Endpoints sorted by identity (`METHOD path` for HTTP kinds).
    pub endpoints: Vec<Arc<EndpointSpec>>,
    /// Where the contract came from. Outside the fingerprint.
    pub evidence: Evidence,
    /// Contract-level fields the normalizer keeps but does not model (deny by default: MCP
    /// snapshot keys outside the descriptive allow-list), verbatim. Inside the fingerprint when
    /// not empty, so every contract without them keeps its fingerprint.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, Value>,
    /// Server-level text that reaches a model (MCP `instructions`). Inside the fingerprint.
    pub instructions: Option<String>,
    pub kind: Kind,
    /// Descriptive metadata (document title, version string). Outside the fingerprint.
    pub metadata: Metadata,
    pub name: String,
    pub namespace: String,
    /// What changes the invocation target (base URLs, transport). Inside the fingerprint.
    pub remote: Remote,
    /// Root operation types whose name is not the default (GraphQL `schema { query: RootQuery
    /// }`): operation (`query`, `mutation`, `subscription`) → type name. `__typename` and
    /// `fragment ... on Query` see the name. Inside the fingerprint when not empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roots: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Remote {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    /// Base URLs (OpenAPI `servers`, Swagger `schemes://host/basePath`), sorted.
    pub base_urls: Vec<String>,
    pub transport: String,
    /// Server variables (OpenAPI / OpenRPC server `variables`): server URL → variable →
    /// `{"default", "enum"?}`. They choose where calls go, so they are the execution target.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    pub license: Option<String>,
    pub source_type: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    pub format: Option<String>,
    pub title: Option<String>,
    pub version: Option<String>,
}

/// What an endpoint is within its kind, read from `EndpointSpec::method` (which keeps the text:
/// serialization and fingerprints see only it). HTTP methods and any method no kind gives a
/// meaning are [`EndpointSubKind::Other`]: the method text stays the endpoint's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointSubKind {
    /// An MCP tool.
    Tool,
    /// An MCP prompt.
    Prompt,
    /// An MCP resource template.
    ResourceTemplate,
    /// An MCP resource.
    Resource,
    /// An OpenAPI webhook (the provider calls the consumer).
    Webhook,
    /// An OpenAPI callback (the provider calls the consumer).
    Callback,
    /// A database table.
    Table,
    /// A database view.
    View,
    /// A database or OData function.
    Function,
    /// A database procedure.
    Procedure,
    /// Any other method (an HTTP method, an OpenRPC call, a GraphQL root field, ...).
    Other,
}

impl EndpointSubKind {
    /// Every sub-kind with a method text of its own, with that text.
    pub const NAMED: &'static [(EndpointSubKind, &'static str)] = &[
        (EndpointSubKind::Tool, "TOOL"),
        (EndpointSubKind::Prompt, "PROMPT"),
        (EndpointSubKind::ResourceTemplate, "RESOURCE_TEMPLATE"),
        (EndpointSubKind::Resource, "RESOURCE"),
        (EndpointSubKind::Webhook, "WEBHOOK"),
        (EndpointSubKind::Callback, "CALLBACK"),
        (EndpointSubKind::Table, "TABLE"),
        (EndpointSubKind::View, "VIEW"),
        (EndpointSubKind::Function, "FUNCTION"),
        (EndpointSubKind::Procedure, "PROCEDURE"),
    ];

    /// The sub-kind a method text names (`Other` for any text not in [`Self::NAMED`]).
    pub fn of(method: &str) -> EndpointSubKind {
        Self::NAMED
            .iter()
            .find(|(_, text)| *text == method)
            .map_or(EndpointSubKind::Other, |(sub, _)| *sub)
    }

    /// The method text of a named sub-kind (`None` for `Other`, whose text is the endpoint's).
    pub fn as_str(self) -> Option<&'static str> {
        Self::NAMED
            .iter()
            .find(|(sub, _)| *sub == self)
            .map(|(_, text)| *text)
    }
}

/// One callable operation of a contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    pub aliases: Vec<String>,
    pub deprecated: bool,
    pub description: Option<CompactString>,
    pub destructive: bool,
    /// Keywords of the endpoint's source objects the model does not understand, kept verbatim
    /// (deny by default), keyed by their path below the endpoint (`responses.200.x-cache`,
    /// `annotations.Org.OData.Core.V1.Foo`). A change is `extension-changed` for an `x-` key,
    /// else `unclassified-change`, at its path. Inside the fingerprint when not empty.
    #[serde(default, skip_serializing_if = "SmallMap::is_empty")]
    pub extensions: SmallMap<String, Value>,
    /// Calling twice with the same input has no further effect (MCP `idempotentHint`; HTTP
    /// GET/HEAD/OPTIONS/TRACE/PUT/DELETE).
    pub idempotent: bool,
    /// What a caller sends, as one JSON Schema (kinds without HTTP parameters use this).
    /// Boxed (as `output_schema`, `meta`): most endpoints have none, and the model of a large
    /// document holds every endpoint.
    pub input_schema: Option<Box<Value>>,
    /// Vendor metadata that reaches the caller (MCP `_meta`); `None` for kinds without it.
    pub meta: Option<Box<Value>>,
    /// HTTP verb (upper case), or CALL, QUERY, MUTATION, SUBSCRIPTION, FUNCTION, ACTION, TOOL.
    pub method: CompactString,
    /// operationId when present, else `METHOD path`.
    pub name: CompactString,
    /// The endpoint may interact with an open world beyond its provider (MCP `openWorldHint`).
    pub open_world: bool,
    pub operation_id: Option<CompactString>,
    /// What a caller receives on success, as one JSON Schema.
    pub output_schema: Option<Box<Value>>,
    /// Sorted by (location, name).
    pub parameters: Vec<ParameterSpec>,
    /// Path template with parameter names normalized to `{}` for identity.
    pub path: CompactString,
    /// The path template as written (parameter names kept).
    pub path_template: CompactString,
    pub read_only: bool,
    /// Boxed: most endpoints have none, and the model of a large document holds every endpoint.
    pub request_body: Option<Box<RequestBody>>,
    /// Keyed by status code (`200`, `4XX`, `default`).
    pub responses: SmallMap<CompactString, ResponseSpec>,
    /// Security requirements in effect: alternatives, each a sorted list of `scheme[:scopes]`.
    pub security: Vec<Vec<String>>,
    /// Servers this endpoint is called on when they override the document's (OpenAPI
    /// operation- or path-level `servers`, OpenRPC method `servers`): each `{"url",
    /// "variables"?}`, sorted. Where calls go: a change is `execution-target-changed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<Value>,
    /// Model-facing display title (MCP `title`).
    pub title: Option<CompactString>,
}

impl EndpointSpec {
    /// What the endpoint is within its kind (from `method`).
    pub fn sub_kind(&self) -> EndpointSubKind {
        EndpointSubKind::of(&self.method)
    }

    /// Every JSON Schema value the endpoint holds (where `$ref`s can occur).
    pub fn schemas(&self) -> Vec<&Value> {
        let mut out: Vec<&Value> = Vec::new();
        for p in &self.parameters {
            out.push(&p.schema);
        }
        if let Some(body) = &self.request_body {
            out.extend(body.content.values());
        }
        for response in self.responses.values() {
            out.extend(response.content.values());
            out.extend(response.headers.values());
        }
        out.extend(self.input_schema.as_deref());
        out.extend(self.output_schema.as_deref());
        out
    }

    /// The matching identity of an HTTP-like endpoint: `METHOD path`.
    pub fn identity(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The endpoint as the document writes it, for messages: `METHOD template` with the
    /// parameter names kept (`GET /pets/{petId}`); the identity stays the matching key.
    pub fn as_written(&self) -> String {
        let template = if self.path_template.is_empty() {
            &self.path
        } else {
            &self.path_template
        };
        format!("{} {}", self.method, template)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterSpec {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    pub deprecated: bool,
    pub description: Option<String>,
    /// `path`, `query`, `header`, `cookie`.
    pub location: String,
    pub name: String,
    pub required: bool,
    pub schema: Value,
    /// Serialization details (style, explode, allowReserved, content media type), if stated.
    pub style: SmallMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestBody {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    /// Media type → schema.
    pub content: SmallMap<String, Value>,
    pub description: Option<String>,
    /// Media type → property → its Encoding object (`contentType`, `headers`, `style`,
    /// `explode`, `allowReserved`), for multipart and form bodies.
    #[serde(default, skip_serializing_if = "SmallMap::is_empty")]
    pub encoding: SmallMap<String, Value>,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    // Fields in sorted order: canonical_struct_text relies on it (see fingerprint.rs).
    /// Media type → schema.
    pub content: SmallMap<String, Value>,
    pub description: Option<CompactString>,
    /// Header name (lower case) → the header object's facts beside its schema, when stated:
    /// `required`, `deprecated`, `style`, `explode`, `content` (media type).
    #[serde(default, skip_serializing_if = "SmallMap::is_empty")]
    pub header_facts: SmallMap<String, SmallMap<String, Value>>,
    /// Header name (lower case) → schema.
    pub headers: SmallMap<String, Value>,
    /// Link name → Link object (design-time hints for following calls), verbatim.
    #[serde(default, skip_serializing_if = "SmallMap::is_empty")]
    pub links: SmallMap<String, Value>,
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
    /// What happened, e.g. `parameter_added` (one rule may emit several kinds).
    pub kind: ChangeKind,
    /// The id of the rule that judged it.
    pub rule: String,
    pub severity: Severity,
    pub before: Option<ValueOrd>,
    pub after: Option<ValueOrd>,
    /// One plain-English sentence.
    pub message: String,
    /// Outside the consumer's scope (`uses`): demoted to `info`, with its rule and id kept.
    /// Serialized only when true, so every report without a scope keeps its bytes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub out_of_scope: bool,
    /// Why the stability policy (`[policy]`) changed this change's severity, when it did
    /// (`min_stability`, `allow_removal_after_sunset`). Serialized only when set, so stored
    /// changes without it keep loading and reports without a policy keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
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
    /// Number of changes in the report, info ones included (what `pending_change_count` has
    /// always counted).
    pub fn change_count(&self) -> usize {
        self.changes.len()
    }

    /// Number of changes demoted as outside the consumer's scope.
    pub fn out_of_scope_count(&self) -> usize {
        self.changes.iter().filter(|c| c.out_of_scope).count()
    }
}
