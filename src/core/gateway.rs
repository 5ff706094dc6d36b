//! The MCP gateway's decisions (`schemawatch mcp-gateway`, docs/design.md "Gateway"), pure:
//! which upstream items the agent may see and call, which resource URIs it may read, what a
//! tool or prompt result carries that no contract covers (hidden characters, by class), and
//! what the counters say. The I/O (stdio toward the agent, the upstream session, the registry)
//! lives in `src/gateway/`.
//!
//! An item is *accepted* when its current upstream definition has the endpoint fingerprint the
//! accepted contract records for the same identity (`TOOL name`, `PROMPT name`,
//! `RESOURCE_TEMPLATE uriTemplate`, `RESOURCE uri`): both sides are fingerprinted by the same
//! normalizer, so "equal" means "what a human accepted". Everything else is withheld.

use crate::core::hidden::{hidden_items, Hidden};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The four kinds of MCP items a contract holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemKind {
    Tool,
    Prompt,
    ResourceTemplate,
    Resource,
}

impl ItemKind {
    pub const ALL: [ItemKind; 4] = [
        ItemKind::Tool,
        ItemKind::Prompt,
        ItemKind::ResourceTemplate,
        ItemKind::Resource,
    ];

    /// The endpoint method the MCP normalizer gives this kind.
    pub fn method(self) -> &'static str {
        match self {
            ItemKind::Tool => "TOOL",
            ItemKind::Prompt => "PROMPT",
            ItemKind::ResourceTemplate => "RESOURCE_TEMPLATE",
            ItemKind::Resource => "RESOURCE",
        }
    }

    /// The `*/list` method.
    pub fn list_method(self) -> &'static str {
        match self {
            ItemKind::Tool => "tools/list",
            ItemKind::Prompt => "prompts/list",
            ItemKind::ResourceTemplate => "resources/templates/list",
            ItemKind::Resource => "resources/list",
        }
    }

    /// The array key of the list result (and of the snapshot document).
    pub fn list_key(self) -> &'static str {
        match self {
            ItemKind::Tool => "tools",
            ItemKind::Prompt => "prompts",
            ItemKind::ResourceTemplate => "resourceTemplates",
            ItemKind::Resource => "resources",
        }
    }

    /// The field that names an item.
    pub fn id_key(self) -> &'static str {
        match self {
            ItemKind::Tool | ItemKind::Prompt => "name",
            ItemKind::ResourceTemplate => "uriTemplate",
            ItemKind::Resource => "uri",
        }
    }

    /// The capability that declares the kind.
    pub fn capability(self) -> &'static str {
        match self {
            ItemKind::Tool => "tools",
            ItemKind::Prompt => "prompts",
            ItemKind::ResourceTemplate | ItemKind::Resource => "resources",
        }
    }

    /// The notification that tells the agent the list changed.
    pub fn list_changed(self) -> &'static str {
        match self {
            ItemKind::Tool => "notifications/tools/list_changed",
            ItemKind::Prompt => "notifications/prompts/list_changed",
            ItemKind::ResourceTemplate | ItemKind::Resource => {
                "notifications/resources/list_changed"
            }
        }
    }

    /// For messages: `tool`, `prompt`, `resource template`, `resource`.
    pub fn label(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::ResourceTemplate => "resource template",
            ItemKind::Resource => "resource",
        }
    }

    /// The endpoint identity of the item named `id` (what [`SpecIndex::endpoint_fingerprints`]
    /// keys by).
    ///
    /// [`SpecIndex::endpoint_fingerprints`]: crate::core::fingerprint::SpecIndex::endpoint_fingerprints
    pub fn identity(self, id: &str) -> String {
        format!("{} {id}", self.method())
    }

    /// The kind and name of an endpoint identity, when it is an MCP item's.
    pub fn of_identity(identity: &str) -> Option<(ItemKind, &str)> {
        let (method, id) = identity.split_once(' ')?;
        ItemKind::ALL
            .into_iter()
            .find(|k| k.method() == method)
            .map(|k| (k, id))
    }
}

/// Where an item stands against the accepted contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// The current definition is the accepted one: visible and callable.
    Accepted,
    /// The accepted contract has the item with another definition (drifted, or a rejected
    /// change): withheld until a review is accepted.
    Drifted,
    /// The accepted contract does not have the item: withheld until accepted.
    New,
    /// Accepted, but the upstream does not offer it now.
    Absent,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Accepted => "accepted",
            Standing::Drifted => "drifted",
            Standing::New => "not yet accepted",
            Standing::Absent => "not offered by the upstream",
        }
    }
}

/// Every item's standing, by endpoint identity, and the fingerprint of each current one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluation {
    pub standing: BTreeMap<String, Standing>,
    /// Current upstream fingerprints (what the agent sees is keyed by these too).
    pub current: BTreeMap<String, String>,
}

/// Compares the current upstream fingerprints with the accepted ones, identity by identity.
/// Only identities of MCP items are judged (the contract holds nothing else for MCP).
pub fn evaluate(
    accepted: &BTreeMap<String, String>,
    current: &BTreeMap<String, String>,
) -> Evaluation {
    let mut standing = BTreeMap::new();
    for (identity, fp) in current {
        let s = match accepted.get(identity) {
            Some(a) if a == fp => Standing::Accepted,
            Some(_) => Standing::Drifted,
            None => Standing::New,
        };
        standing.insert(identity.clone(), s);
    }
    for identity in accepted.keys() {
        if !current.contains_key(identity) {
            standing.insert(identity.clone(), Standing::Absent);
        }
    }
    Evaluation {
        standing,
        current: current.clone(),
    }
}

impl Evaluation {
    pub fn standing_of(&self, kind: ItemKind, id: &str) -> Option<Standing> {
        self.standing.get(&kind.identity(id)).copied()
    }

    /// Whether the agent may see and use the item.
    pub fn is_visible(&self, kind: ItemKind, id: &str) -> bool {
        self.standing_of(kind, id) == Some(Standing::Accepted)
    }

    /// What the agent sees of one kind: identity → fingerprint of every accepted item.
    pub fn visible(&self, kind: ItemKind) -> BTreeMap<&str, &str> {
        self.current
            .iter()
            .filter(|(identity, _)| self.standing.get(*identity) == Some(&Standing::Accepted))
            .filter_map(|(identity, fp)| {
                let (k, id) = ItemKind::of_identity(identity)?;
                (k == kind).then_some((id, fp.as_str()))
            })
            .collect()
    }

    /// Items withheld from the agent (current but not accepted), in identity order.
    pub fn withheld(&self) -> Vec<(ItemKind, &str, Standing)> {
        self.standing
            .iter()
            .filter(|(_, s)| matches!(s, Standing::Drifted | Standing::New))
            .filter_map(|(identity, s)| {
                let (k, id) = ItemKind::of_identity(identity)?;
                Some((k, id, *s))
            })
            .collect()
    }
}

/// The list_changed notifications the agent is owed when its visible set moves from `before`
/// to `after` (none when nothing it sees changed), in a stable order.
pub fn list_changes(before: &Evaluation, after: &Evaluation) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for kind in ItemKind::ALL {
        if before.visible(kind) != after.visible(kind) && !out.contains(&kind.list_changed()) {
            out.push(kind.list_changed());
        }
    }
    out
}

/// [`list_changes`] for an agent that sees every item (`--mode report`): the kinds whose
/// current items or definitions moved.
pub fn listing_changes(before: &Evaluation, after: &Evaluation) -> Vec<&'static str> {
    let of = |e: &Evaluation, kind: ItemKind| -> Vec<(String, String)> {
        e.current
            .iter()
            .filter(|(identity, _)| ItemKind::of_identity(identity).is_some_and(|(k, _)| k == kind))
            .map(|(i, f)| (i.clone(), f.clone()))
            .collect()
    };
    let mut out: Vec<&'static str> = Vec::new();
    for kind in ItemKind::ALL {
        if of(before, kind) != of(after, kind) && !out.contains(&kind.list_changed()) {
            out.push(kind.list_changed());
        }
    }
    out
}

/// A call the agent may not make, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub kind: ItemKind,
    pub item: String,
    /// `None`: the upstream does not list the item at all.
    pub standing: Option<Standing>,
}

impl Refusal {
    /// The JSON-RPC error message: names the watch, the item and the open review.
    pub fn message(&self, watch: &str, review: Option<i64>) -> String {
        let Some(standing) = self.standing else {
            return format!(
                "schemawatch mcp-gateway: {} {:?} of watch {watch} is unknown (the upstream does not list it; names are matched exactly); the call is refused",
                self.kind.label(),
                self.item
            );
        };
        let why = standing.as_str();
        let review = match (standing, review) {
            (Standing::Accepted, _) => String::new(),
            (_, Some(id)) => format!("; open review {id} (`schemawatch pending show {id}`)"),
            (_, None) => "; no open review yet (the next refresh of the watch queues one)".into(),
        };
        format!(
            "schemawatch mcp-gateway: {} {:?} of watch {watch} is {why}; the call is refused until its current definition is accepted{review}",
            self.kind.label(),
            self.item
        )
    }
}

/// Whether a call to the item named `id` may go upstream: only an accepted item, by exact
/// name (never a near match).
pub fn decide_call(evaluation: &Evaluation, kind: ItemKind, id: &str) -> Result<(), Refusal> {
    match evaluation.standing_of(kind, id) {
        Some(Standing::Accepted) => Ok(()),
        standing => Err(Refusal {
            kind,
            item: id.to_string(),
            standing,
        }),
    }
}

/// Whether `resources/read` of `uri` may go upstream: the URI is an accepted resource, or
/// matches an accepted resource template of RFC 6570 level 1 or 2 (templates of levels 3–4
/// are withheld for reads). The refusal names the URI.
pub fn decide_read(evaluation: &Evaluation, uri: &str) -> Result<(), Refusal> {
    if evaluation.is_visible(ItemKind::Resource, uri) {
        return Ok(());
    }
    let templates = evaluation.visible(ItemKind::ResourceTemplate);
    if templates.keys().any(|t| template_matches(t, uri)) {
        return Ok(());
    }
    Err(Refusal {
        kind: ItemKind::Resource,
        item: uri.to_string(),
        standing: evaluation
            .standing_of(ItemKind::Resource, uri)
            .filter(|s| *s != Standing::Accepted),
    })
}

/// One piece of a URI template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Literal(&'a str),
    /// `{var}`: unreserved characters and percent-encodings.
    Simple,
    /// `{+var}`: also reserved characters.
    Reserved,
    /// `{#var}`: `#` then what `{+var}` matches, or nothing.
    Fragment,
}

/// The pieces of a level 1–2 template; `None` for levels 3–4 or a malformed template.
fn template_pieces(template: &str) -> Option<Vec<Piece<'_>>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Piece::Literal(&rest[..open]));
        }
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let expression = &after[..close];
        let (piece, name) = match expression.as_bytes().first() {
            Some(b'+') => (Piece::Reserved, &expression[1..]),
            Some(b'#') => (Piece::Fragment, &expression[1..]),
            _ => (Piece::Simple, expression),
        };
        // RFC 6570 varname: a `.` only between characters (a leading one is the operator).
        let plain = !name.starts_with('.')
            && !name.ends_with('.')
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%' || c == '.');
        if !plain {
            // An operator of level 3 (`.`, `/`, `;`, `?`, `&`), several variables (`,`) or a
            // modifier of level 4 (`:`, `*`).
            return None;
        }
        out.push(piece);
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return None;
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest));
    }
    Some(out)
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'%')
}

fn reserved_or_unreserved(b: u8) -> bool {
    unreserved(b) || b":/?#[]@!$&'()*+,;=".contains(&b)
}

/// The RFC 6570 levels of a template: `Some(1..=2)` when it uses only levels 1–2.
pub fn template_level(template: &str) -> Option<u8> {
    let pieces = template_pieces(template)?;
    let level2 = pieces
        .iter()
        .any(|p| matches!(p, Piece::Reserved | Piece::Fragment));
    Some(if level2 { 2 } else { 1 })
}

/// Whether `uri` is an expansion of the level 1–2 `template` (always false for levels 3–4).
pub fn template_matches(template: &str, uri: &str) -> bool {
    let Some(pieces) = template_pieces(template) else {
        return false;
    };
    let bytes = uri.as_bytes();
    // reach[i]: the pieces so far can end at byte i.
    let mut reach = vec![false; bytes.len() + 1];
    reach[0] = true;
    for piece in &pieces {
        let mut next = vec![false; bytes.len() + 1];
        for start in (0..=bytes.len()).filter(|i| reach[*i]) {
            match piece {
                Piece::Literal(text) => {
                    if uri[start..].starts_with(text) {
                        next[start + text.len()] = true;
                    }
                }
                Piece::Simple | Piece::Reserved => {
                    let ok: fn(u8) -> bool = if *piece == Piece::Simple {
                        unreserved
                    } else {
                        reserved_or_unreserved
                    };
                    next[start] = true;
                    let mut i = start;
                    while i < bytes.len() && ok(bytes[i]) {
                        i += 1;
                        next[i] = true;
                    }
                }
                Piece::Fragment => {
                    next[start] = true;
                    if bytes.get(start) == Some(&b'#') {
                        let mut i = start + 1;
                        next[i] = true;
                        while i < bytes.len() && reserved_or_unreserved(bytes[i]) {
                            i += 1;
                            next[i] = true;
                        }
                    }
                }
            }
        }
        reach = next;
    }
    reach[bytes.len()]
}

/// Classes of hidden characters in model-facing results (`--results CLASS=ACTION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HiddenClass {
    /// Unicode tag characters U+E0000–U+E007F.
    Tag,
    /// Bidi embeddings, overrides, isolates and marks.
    Bidi,
    /// Zero-width spaces and joiners, word joiner, BOM.
    ZeroWidth,
    /// C0 and C1 controls (TAB and LF are not hidden), DEL.
    Control,
    /// `<!-- … -->`.
    HtmlComment,
    /// Every other hidden character (variation selectors, fillers, other format characters).
    Other,
}

impl HiddenClass {
    pub const ALL: [HiddenClass; 6] = [
        HiddenClass::Tag,
        HiddenClass::Bidi,
        HiddenClass::ZeroWidth,
        HiddenClass::Control,
        HiddenClass::HtmlComment,
        HiddenClass::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HiddenClass::Tag => "tag",
            HiddenClass::Bidi => "bidi",
            HiddenClass::ZeroWidth => "zero-width",
            HiddenClass::Control => "control",
            HiddenClass::HtmlComment => "html-comment",
            HiddenClass::Other => "other",
        }
    }

    pub fn parse(text: &str) -> Option<HiddenClass> {
        HiddenClass::ALL.into_iter().find(|c| c.as_str() == text)
    }

    /// The class of one hidden item.
    pub fn of(item: Hidden) -> HiddenClass {
        let c = match item {
            Hidden::HtmlComment => return HiddenClass::HtmlComment,
            Hidden::Char(c) => c as u32,
        };
        match c {
            0xE0000..=0xE007F => HiddenClass::Tag,
            0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069 => HiddenClass::Bidi,
            0x200B..=0x200D | 0x2060 | 0xFEFF | 0x180E => HiddenClass::ZeroWidth,
            0x00..=0x1F | 0x7F..=0x9F => HiddenClass::Control,
            _ => HiddenClass::Other,
        }
    }
}

/// What the gateway does with a result carrying a class of hidden characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Passed unchanged, not logged.
    Pass,
    /// Passed, logged to stderr and counted.
    Flag,
    /// Replaced by an error naming the code points.
    Withhold,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Pass => "pass",
            Action::Flag => "flag",
            Action::Withhold => "withhold",
        }
    }

    pub fn parse(text: &str) -> Option<Action> {
        [Action::Pass, Action::Flag, Action::Withhold]
            .into_iter()
            .find(|a| a.as_str() == text)
    }
}

/// The action for each class of hidden characters in results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultPolicy(BTreeMap<HiddenClass, Action>);

impl Default for ResultPolicy {
    /// Tag characters and bidi controls are withheld; the rest is flagged.
    fn default() -> Self {
        ResultPolicy(
            HiddenClass::ALL
                .into_iter()
                .map(|c| {
                    let action = match c {
                        HiddenClass::Tag | HiddenClass::Bidi => Action::Withhold,
                        _ => Action::Flag,
                    };
                    (c, action)
                })
                .collect(),
        )
    }
}

impl ResultPolicy {
    /// Applies `CLASS=ACTION` (e.g. `zero-width=withhold`).
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        let (class, action) = spec
            .split_once('=')
            .ok_or_else(|| format!("--results {spec:?}: expected CLASS=withhold|flag|pass"))?;
        let class = HiddenClass::parse(class).ok_or_else(|| {
            let names: Vec<&str> = HiddenClass::ALL.iter().map(|c| c.as_str()).collect();
            format!(
                "--results {spec:?}: unknown class {class:?} (one of {})",
                names.join(", ")
            )
        })?;
        let action = Action::parse(action).ok_or_else(|| {
            format!("--results {spec:?}: unknown action {action:?} (withhold, flag or pass)")
        })?;
        self.0.insert(class, action);
        Ok(())
    }

    pub fn action(&self, class: HiddenClass) -> Action {
        self.0.get(&class).copied().unwrap_or(Action::Flag)
    }
}

/// The hidden characters found in one result, by class.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings(pub BTreeMap<HiddenClass, BTreeSet<Hidden>>);

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The strongest action the policy takes on these findings (`Pass` when none).
    pub fn action(&self, policy: &ResultPolicy) -> Action {
        self.0
            .keys()
            .map(|c| policy.action(*c))
            .max()
            .unwrap_or(Action::Pass)
    }

    /// `U+E0041, U+E0042 (tag); U+200B (zero-width)`: code points, never the text; at most
    /// 8 per class.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (class, items) in &self.0 {
            let mut names: Vec<String> = items.iter().take(8).map(|h| h.name()).collect();
            if items.len() > 8 {
                names.push(format!("and {} more", items.len() - 8));
            }
            parts.push(format!("{} ({})", names.join(", "), class.as_str()));
        }
        parts.join("; ")
    }
}

/// Scans the model-facing text of a `tools/call` or `prompts/get` result: every string
/// (text content, `structuredContent`, embedded resource text, prompt messages, object keys),
/// except base64 payloads (`blob`, and the `data` of image and audio content).
pub fn scan_result(result: &Value) -> Findings {
    let mut findings = Findings::default();
    scan_value(result, &mut findings);
    findings
}

fn scan_text(text: &str, findings: &mut Findings) {
    for item in hidden_items(text) {
        findings
            .0
            .entry(HiddenClass::of(item))
            .or_default()
            .insert(item);
    }
}

fn scan_value(value: &Value, findings: &mut Findings) {
    match value {
        Value::String(s) => scan_text(s, findings),
        Value::Array(items) => items.iter().for_each(|v| scan_value(v, findings)),
        Value::Object(map) => {
            let binary = matches!(
                map.get("type").and_then(Value::as_str),
                Some("image" | "audio")
            );
            for (key, v) in map {
                if key == "blob" || (binary && key == "data") {
                    continue;
                }
                scan_text(key, findings);
                scan_value(v, findings);
            }
        }
        _ => {}
    }
}

/// The `tools/call` result that stands in for a withheld one.
pub fn withheld_tool_result(watch: &str, tool: &str, findings: &Findings) -> Value {
    json!({
        "content": [{
            "type": "text",
            "text": format!(
                "schemawatch mcp-gateway withheld the result of tool {tool:?} of watch {watch}: it carries hidden characters {}",
                findings.describe()
            ),
        }],
        "isError": true,
    })
}

/// What the gateway does with a request the upstream sends the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerRequest {
    Forward,
    Refuse,
}

/// The policy for server-to-client requests: sampling spends the host's model, so it is
/// refused unless allowed; elicitation and roots are forwarded unless refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerRequestPolicy {
    pub sampling: ServerRequest,
    pub elicitation: ServerRequest,
    pub roots: ServerRequest,
}

impl Default for ServerRequestPolicy {
    fn default() -> Self {
        ServerRequestPolicy {
            sampling: ServerRequest::Refuse,
            elicitation: ServerRequest::Forward,
            roots: ServerRequest::Forward,
        }
    }
}

impl ServerRequestPolicy {
    /// What happens to a server request of `method` (`ping` and unknown methods are
    /// forwarded: the agent host answers what it does not know).
    pub fn decide(&self, method: &str) -> ServerRequest {
        match method {
            "sampling/createMessage" => self.sampling,
            "elicitation/create" => self.elicitation,
            "roots/list" => self.roots,
            _ => ServerRequest::Forward,
        }
    }

    /// The agent's client capabilities as the upstream should see them: a refused request's
    /// capability is removed, so the upstream does not try it.
    pub fn client_capabilities(&self, agent: &Value) -> Value {
        let mut caps = agent.as_object().cloned().unwrap_or_default();
        for (key, decision) in [
            ("sampling", self.sampling),
            ("elicitation", self.elicitation),
            ("roots", self.roots),
        ] {
            if decision == ServerRequest::Refuse {
                caps.remove(key);
            }
        }
        Value::Object(caps)
    }
}

/// One request of a 2026-07-28 `input_required` result (`inputRequests`): its key, method
/// and params.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequest {
    pub key: String,
    pub method: String,
    pub params: Value,
}

/// Whether `result` is a 2026-07-28 `input_required` result.
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The input requests of an `input_required` result under the server-request policy: all of
/// them (in key order) when every one may reach the agent, else the methods refused (each
/// once, in key order).
pub fn decide_input_requests(
    policy: &ServerRequestPolicy,
    result: &Value,
) -> Result<Vec<InputRequest>, Vec<String>> {
    let mut wanted = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    if let Some(Value::Object(requests)) = result.get("inputRequests") {
        let mut keys: Vec<&String> = requests.keys().collect();
        keys.sort();
        for key in keys {
            let request = &requests[key.as_str()];
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if policy.decide(&method) == ServerRequest::Refuse || method.is_empty() {
                if !refused.contains(&method) {
                    refused.push(method);
                }
                continue;
            }
            wanted.push(InputRequest {
                key: key.clone(),
                method,
                params: request.get("params").cloned().unwrap_or(Value::Null),
            });
        }
    }
    if refused.is_empty() {
        Ok(wanted)
    } else {
        Err(refused)
    }
}

/// Why the gateway does not pass a server request to the agent host (the policy's flag).
pub fn refusal_reason(method: &str) -> &'static str {
    match method {
        "sampling/createMessage" => {
            "sampling spends the agent host's model; the gateway refuses it unless run with --allow-sampling"
        }
        "elicitation/create" => "the gateway runs with --refuse-elicitation",
        "roots/list" => "the gateway runs with --refuse-roots",
        _ => "the gateway does not know this request",
    }
}

/// The capabilities the agent is told: the upstream's, restricted to what the gateway
/// supports (tools, prompts, resources, logging, completions), with `listChanged` always
/// declared for each list (the gateway tells the agent whenever its visible set moves) and
/// resource subscriptions dropped.
pub fn agent_capabilities(upstream: Option<&Value>) -> Value {
    let mut out = Map::new();
    let upstream = upstream.and_then(Value::as_object);
    for key in ["tools", "prompts", "resources"] {
        if let Some(Value::Object(_)) = upstream.and_then(|u| u.get(key)) {
            out.insert(key.into(), json!({"listChanged": true}));
        }
    }
    for key in ["logging", "completions"] {
        if let Some(v @ Value::Object(_)) = upstream.and_then(|u| u.get(key)) {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// What the gateway counts; a summary line goes to stderr every few minutes and at exit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub forwarded_calls: u64,
    pub refused_calls: u64,
    pub withheld_items: u64,
    pub withheld_results: u64,
    pub flagged_results: u64,
    pub refused_server_requests: u64,
    /// Upstream listings read (startup, announced changes, strict checks).
    pub listings: u64,
    /// What enforcement would have refused or withheld in `--mode report`.
    pub would_refuse: u64,
    pub would_withhold: u64,
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "forwarded_calls={} refused_calls={} withheld_items={} withheld_results={} flagged_results={} refused_server_requests={} listings={} would_refuse={} would_withhold={}",
            self.forwarded_calls,
            self.refused_calls,
            self.withheld_items,
            self.withheld_results,
            self.flagged_results,
            self.refused_server_requests,
            self.listings,
            self.would_refuse,
            self.would_withhold
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn input_requests_follow_the_server_request_policy() {
        let result = json!({"resultType": "input_required", "requestState": "s",
            "inputRequests": {
                "b": {"method": "elicitation/create", "params": {"message": "name?"}},
                "a": {"method": "roots/list", "params": {}}}});
        assert!(is_input_required(&result));
        assert!(!is_input_required(&json!({"resultType": "complete"})));
        let policy = ServerRequestPolicy::default();
        let wanted = decide_input_requests(&policy, &result).unwrap();
        assert_eq!(
            wanted.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(wanted[1].params, json!({"message": "name?"}));
        let sampling = json!({"resultType": "input_required", "inputRequests": {
            "s1": {"method": "sampling/createMessage", "params": {}},
            "s2": {"method": "sampling/createMessage", "params": {}},
            "r": {"method": "roots/list"}}});
        assert_eq!(
            decide_input_requests(&policy, &sampling),
            Err(vec!["sampling/createMessage".to_string()])
        );
        assert!(refusal_reason("sampling/createMessage").contains("--allow-sampling"));
    }

    use super::*;

    fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn only_items_with_the_accepted_fingerprint_are_visible_and_callable() {
        let accepted = map(&[("TOOL read", "a"), ("TOOL write", "b"), ("TOOL gone", "c")]);
        let current = map(&[
            ("TOOL read", "a"),
            ("TOOL write", "B"),
            ("TOOL shadow", "d"),
        ]);
        let e = evaluate(&accepted, &current);
        assert_eq!(
            e.standing_of(ItemKind::Tool, "read"),
            Some(Standing::Accepted)
        );
        assert_eq!(
            e.standing_of(ItemKind::Tool, "write"),
            Some(Standing::Drifted)
        );
        assert_eq!(e.standing_of(ItemKind::Tool, "shadow"), Some(Standing::New));
        assert_eq!(
            e.standing_of(ItemKind::Tool, "gone"),
            Some(Standing::Absent)
        );
        assert_eq!(
            e.visible(ItemKind::Tool).into_keys().collect::<Vec<_>>(),
            vec!["read"]
        );
        assert!(decide_call(&e, ItemKind::Tool, "read").is_ok());
        let refusal = decide_call(&e, ItemKind::Tool, "write").unwrap_err();
        let message = refusal.message("team.notes", Some(7));
        assert!(message.contains("team.notes"), "{message}");
        assert!(message.contains("\"write\""), "{message}");
        assert!(message.contains("open review 7"), "{message}");
        // An unknown name is refused, never resolved by a near match.
        let unknown = decide_call(&e, ItemKind::Tool, "Read").unwrap_err();
        assert_eq!(unknown.standing, None);
        assert!(!unknown.message("w", Some(7)).contains("review"));
        assert_eq!(
            e.withheld(),
            vec![
                (ItemKind::Tool, "shadow", Standing::New),
                (ItemKind::Tool, "write", Standing::Drifted)
            ]
        );
    }

    #[test]
    fn list_changed_only_when_the_visible_set_moves() {
        let accepted = map(&[("TOOL a", "1"), ("PROMPT p", "2")]);
        let before = evaluate(&accepted, &map(&[("TOOL a", "1"), ("PROMPT p", "2")]));
        // A new, withheld tool: the agent sees nothing new.
        let added = evaluate(
            &accepted,
            &map(&[("TOOL a", "1"), ("TOOL b", "9"), ("PROMPT p", "2")]),
        );
        assert!(list_changes(&before, &added).is_empty());
        let drifted = evaluate(&accepted, &map(&[("TOOL a", "X"), ("PROMPT p", "2")]));
        assert_eq!(
            list_changes(&before, &drifted),
            vec!["notifications/tools/list_changed"]
        );
        // The review is accepted: visible again, the agent is told again.
        let now = evaluate(
            &map(&[("TOOL a", "X"), ("PROMPT p", "2")]),
            &drifted.current,
        );
        assert_eq!(
            list_changes(&drifted, &now),
            vec!["notifications/tools/list_changed"]
        );
        // Seeing everything (report mode), a new item is a change; an acceptance is not.
        assert_eq!(
            listing_changes(&before, &added),
            vec!["notifications/tools/list_changed"]
        );
        assert!(listing_changes(&drifted, &now).is_empty());
    }

    #[test]
    fn templates_of_levels_one_and_two_match_and_higher_levels_never_do() {
        assert!(template_matches("notes://{id}", "notes://42"));
        assert!(template_matches("notes://{id}/raw", "notes://a-b_c.d~/raw"));
        assert!(!template_matches("notes://{id}", "notes://4/2"));
        assert!(!template_matches("notes://{id}", "other://42"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("doc://x{#frag}", "doc://x#sec/1"));
        assert!(template_matches("doc://x{#frag}", "doc://x"));
        assert_eq!(template_level("notes://{id}"), Some(1));
        assert_eq!(template_level("file:///{+path}"), Some(2));
        for level3 in [
            "a://{x,y}",
            "a://{/path}",
            "a://x{?q}",
            "a://{.ext}",
            "a://{x:3}",
            "a://{x*}",
        ] {
            assert_eq!(template_level(level3), None, "{level3}");
            assert!(!template_matches(level3, "a://1"), "{level3}");
        }
        assert!(!template_matches("a://{x", "a://1"));
        let accepted = map(&[
            ("RESOURCE_TEMPLATE notes://{id}", "t"),
            ("RESOURCE cfg://main", "r"),
        ]);
        let e = evaluate(&accepted, &accepted);
        assert!(decide_read(&e, "notes://12").is_ok());
        assert!(decide_read(&e, "cfg://main").is_ok());
        assert!(decide_read(&e, "cfg://other").is_err());
    }

    #[test]
    fn results_are_scanned_by_class_and_blobs_are_not() {
        let tagged = format!("ok{}{}", '\u{E0041}', '\u{E0042}');
        let result = json!({
            "content": [
                {"type": "text", "text": tagged},
                {"type": "image", "data": "\u{200B}", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "x://1", "text": "a\u{200B}b", "blob": "\u{202E}"}},
            ],
            "structuredContent": {"note": "<!-- hi -->"},
        });
        let findings = scan_result(&result);
        assert_eq!(
            findings.0.keys().copied().collect::<Vec<_>>(),
            vec![
                HiddenClass::Tag,
                HiddenClass::ZeroWidth,
                HiddenClass::HtmlComment
            ]
        );
        let policy = ResultPolicy::default();
        assert_eq!(findings.action(&policy), Action::Withhold);
        let text = findings.describe();
        assert!(text.contains("U+E0041, U+E0042 (tag)"), "{text}");
        assert!(!text.contains("ok"), "{text}");
        let mut lenient = ResultPolicy::default();
        lenient.set("tag=flag").unwrap();
        assert_eq!(findings.action(&lenient), Action::Flag);
        lenient.set("tag=pass").unwrap();
        lenient.set("zero-width=pass").unwrap();
        lenient.set("html-comment=pass").unwrap();
        assert_eq!(findings.action(&lenient), Action::Pass);
        assert!(lenient.set("tag").is_err());
        assert!(lenient.set("tags=pass").is_err());
        assert!(lenient.set("tag=drop").is_err());
        assert_eq!(
            scan_result(&json!({"content": [{"type": "text", "text": "plain\ttext\n"}]}))
                .action(&policy),
            Action::Pass
        );
        let withheld = withheld_tool_result("w", "t", &findings);
        assert_eq!(withheld["isError"], json!(true));
        assert!(!withheld.to_string().contains('\u{E0041}'));
    }

    #[test]
    fn bidi_controls_are_withheld_by_default() {
        let findings = scan_result(&json!({"content": [{"type": "text", "text": "a\u{202E}b"}]}));
        assert_eq!(
            findings.0.keys().copied().collect::<Vec<_>>(),
            vec![HiddenClass::Bidi]
        );
        assert_eq!(findings.action(&ResultPolicy::default()), Action::Withhold);
        let control = scan_result(&json!("a\u{0007}"));
        assert_eq!(control.action(&ResultPolicy::default()), Action::Flag);
    }

    #[test]
    fn server_requests_and_capabilities() {
        let policy = ServerRequestPolicy::default();
        assert_eq!(
            policy.decide("sampling/createMessage"),
            ServerRequest::Refuse
        );
        assert_eq!(policy.decide("elicitation/create"), ServerRequest::Forward);
        assert_eq!(policy.decide("roots/list"), ServerRequest::Forward);
        assert_eq!(
            policy.client_capabilities(&json!({"sampling": {}, "roots": {"listChanged": true}})),
            json!({"roots": {"listChanged": true}})
        );
        assert_eq!(
            agent_capabilities(Some(&json!({
                "tools": {}, "prompts": {"listChanged": false}, "resources": {"subscribe": true},
                "logging": {}, "experimental": {"x": {}}, "tasks": {}
            }))),
            json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true},
                   "resources": {"listChanged": true}, "logging": {}})
        );
    }
}
