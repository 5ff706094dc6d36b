//! Source pointers: which node of the new document a change is about.
//!
//! A change's `path` is the model's matching identity (`endpoints.listPets.parameters.query.
//! limit.schema.maximum`); this maps it back onto the parsed source document the normalizer
//! read, the way the normalizer read it: the operation of an endpoint (by operationId or
//! `METHOD path`, webhooks and callbacks included), its parameters (operation level before
//! path level, `$ref`s followed to the definition), request body (Swagger 2.0 `body` and
//! `formData` parameters), responses and headers (case-insensitively, as the model keys
//! them), then the schema keywords below. A definition's changes (`components.schemas.Pet...`)
//! walk the document from its root. Whatever the new document lacks (a removal) stops the walk
//! at the nearest node that survives. Only OpenAPI and OpenRPC have pointers; the other kinds'
//! changes stay file-level.
//!
//! Run only for the changes being rendered ([`locate_changes`]); the normalizers keep no
//! positions, so the normal diff path pays nothing.

use crate::core::locate::{escape_token, Location, NodeId, SourceTree};
use crate::core::model::{Change, CompactString, Kind};
use std::collections::BTreeMap;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const MAX_REF_HOPS: usize = 32;

/// A node of the document and its JSON pointer.
#[derive(Clone)]
struct Cursor<'a> {
    /// Inline up to 24 bytes: a large document has an operation index of them.
    pointer: CompactString,
    tree: &'a SourceTree<'a>,
    node: NodeId,
}

impl<'a> Cursor<'a> {
    fn root(tree: &'a SourceTree<'a>) -> Cursor<'a> {
        Cursor {
            pointer: CompactString::default(),
            tree,
            node: tree.root(),
        }
    }

    fn child(&self, key: &str) -> Option<Cursor<'a>> {
        let node = self.tree.child(self.node, key)?;
        Some(Cursor {
            pointer: self.pointer_to(key),
            tree: self.tree,
            node,
        })
    }

    /// This node's pointer extended by the member or element `key`.
    fn pointer_to(&self, key: &str) -> CompactString {
        let mut pointer = CompactString::with_capacity(self.pointer.len() + 1 + key.len());
        pointer.push_str(&self.pointer);
        pointer.push('/');
        if key.contains(['~', '/']) {
            pointer.push_str(&escape_token(key));
        } else {
            pointer.push_str(key);
        }
        pointer
    }

    /// The members of an object with their cursors, in document order, in one pass (looking
    /// each key up again is a scan per key: quadratic in a 200,000-path `paths`).
    fn members(&self) -> Vec<(&'a str, Cursor<'a>)> {
        let tree = self.tree;
        tree.members(self.node)
            .map(|(key, node)| {
                let cursor = Cursor {
                    pointer: self.pointer_to(key),
                    tree,
                    node,
                };
                (key, cursor)
            })
            .collect()
    }

    /// The member names of an object, in document order.
    fn keys(&self) -> Vec<&'a str> {
        self.tree.members(self.node).map(|(k, _)| k).collect()
    }

    /// The elements of an array.
    fn elements(&self) -> Vec<Cursor<'a>> {
        (0..self.tree.len(self.node))
            .filter_map(|i| self.child(&i.to_string()))
            .collect()
    }

    /// The member whose key equals `key` ignoring ASCII case (media types, statuses and
    /// header names are keyed in lower or upper case by the model).
    fn child_ci(&self, key: &str) -> Option<Cursor<'a>> {
        if let Some(exact) = self.child(key) {
            return Some(exact);
        }
        let k = self
            .keys()
            .into_iter()
            .find(|k| k.eq_ignore_ascii_case(key))?;
        self.child(k)
    }

    fn str(&self, key: &str) -> Option<&'a str> {
        self.tree.as_str(self.tree.child(self.node, key)?)
    }
}

/// The longest `key` with `rest == key` or `rest` starting with `key.` for which `find` gives a
/// node (names may contain dots), and what is left of `rest` after it.
fn longest<T>(rest: &str, mut find: impl FnMut(&str) -> Option<T>) -> Option<(T, &str)> {
    let mut ends: Vec<usize> = rest.match_indices('.').map(|(i, _)| i).collect();
    ends.push(rest.len());
    for end in ends.into_iter().rev() {
        if let Some(found) = find(&rest[..end]) {
            return Some((found, rest.get(end + 1..).unwrap_or("")));
        }
    }
    None
}

/// The first dotted segment of `rest` and what follows it.
fn head(rest: &str) -> (&str, &str) {
    rest.split_once('.').unwrap_or((rest, ""))
}

/// Follows a local `$ref` to its target (the definition is where the change is made).
fn deref(cursor: Cursor<'_>) -> Cursor<'_> {
    let mut current = cursor;
    for _ in 0..MAX_REF_HOPS {
        let Some(reference) = current.str("$ref").and_then(|r| r.strip_prefix('#')) else {
            break;
        };
        let Some(node) = current.tree.resolve(reference) else {
            break;
        };
        current = Cursor {
            pointer: reference.into(),
            tree: current.tree,
            node,
        };
    }
    current
}

/// Descends by dotted keys as far as the document goes, following `$ref`s where a key is
/// not found in the referring node.
fn walk<'a>(start: Cursor<'a>, rest: &str) -> Cursor<'a> {
    let (mut cursor, mut rest) = (start, rest);
    let mut hops = 0;
    while !rest.is_empty() {
        if let Some((next, left)) = longest(rest, |key| cursor.child(key)) {
            cursor = next;
            rest = left;
            continue;
        }
        let target = deref(cursor.clone());
        if target.node == cursor.node || hops >= MAX_REF_HOPS {
            break;
        }
        hops += 1;
        cursor = target;
    }
    cursor
}

/// The source pointer (in `tree`, the new document) of a change at `path`; `None` for kinds
/// without source pointers.
pub fn source_pointer(kind: Kind, tree: &SourceTree, path: &str) -> Option<String> {
    Locator::new(kind, tree).pointer(path)
}

/// How a kind's change paths map back onto its documents (a kind's declaration names its
/// own, `core::kinds`; a kind without one has file-level locations only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pointers {
    /// OpenAPI / Swagger: operations, parameters, bodies, responses, `$ref`s followed.
    Openapi,
    /// OpenRPC: methods, their params and result.
    Openrpc,
}

/// Source pointers of many changes of one document (its operations indexed once).
pub struct Locator<'a> {
    pointers: Option<Pointers>,
    tree: &'a SourceTree<'a>,
    operations: std::cell::OnceCell<Operations<'a>>,
    /// OpenAPI `paths` keys by their normalized path (the first in document order), made on
    /// first use: a removed endpoint's path item is looked up once per change, not found by a
    /// scan of every path.
    path_items: std::cell::OnceCell<BTreeMap<String, &'a str>>,
}

impl<'a> Locator<'a> {
    pub fn new(kind: Kind, tree: &'a SourceTree<'a>) -> Locator<'a> {
        Locator {
            pointers: kind.decl().pointers,
            tree,
            operations: std::cell::OnceCell::new(),
            path_items: std::cell::OnceCell::new(),
        }
    }

    fn path_items(&self) -> &BTreeMap<String, &'a str> {
        self.path_items.get_or_init(|| {
            let mut by_path = BTreeMap::new();
            let keys = Cursor::root(self.tree)
                .child("paths")
                .map(|paths| paths.keys())
                .unwrap_or_default();
            for key in keys {
                by_path
                    .entry(super::openapi::normalize_path(key))
                    .or_insert(key);
            }
            by_path
        })
    }

    /// See [`source_pointer`].
    pub fn pointer(&self, path: &str) -> Option<String> {
        pointer_in(self.pointers?, self.tree, path, || {
            self.operations.get_or_init(|| operations(self.tree))
        })
    }

    /// The pointer of a change: [`Locator::pointer`], except that an endpoint the new document
    /// lacks lands on its path item when that survives (found by the removed endpoint's
    /// identity, `METHOD /path/{}`, the change's `before`).
    pub fn change_pointer(&self, change: &Change) -> Option<String> {
        let pointer = self.pointer(&change.path)?;
        if self.pointers != Some(Pointers::Openapi)
            || change.kind != crate::core::change_kind::ChangeKind::EndpointRemoved
        {
            return Some(pointer);
        }
        let identity = change.before.as_ref().and_then(|b| b.0.as_str());
        let item = identity
            .and_then(|i| i.split_once(' '))
            .and_then(|(_, path)| self.path_items().get(path).copied());
        Some(match item {
            Some(item) => format!("/paths/{}", escape_token(item)),
            None => pointer,
        })
    }
}

fn pointer_in<'a, 'l>(
    pointers: Pointers,
    tree: &'a SourceTree<'a>,
    path: &str,
    ops: impl FnOnce() -> &'l Operations<'a>,
) -> Option<String>
where
    'a: 'l,
{
    let cursor = Cursor::root(tree);
    let found = match pointers {
        Pointers::Openapi => match path.strip_prefix("endpoints.") {
            Some(rest) => openapi_endpoint(tree, ops(), rest),
            None if path == "remote" => ["servers", "host", "basePath", "schemes"]
                .iter()
                .find_map(|k| cursor.child(k))
                .unwrap_or(cursor),
            None => walk(cursor, path),
        },
        Pointers::Openrpc => match path.strip_prefix("endpoints.") {
            Some(rest) => openrpc_method(tree, rest),
            None if path == "remote" => cursor.child("servers").unwrap_or(cursor),
            None => walk(cursor, path),
        },
    };
    Some(found.pointer.into())
}

/// An OpenAPI operation as the normalizer saw it: the operation and its path item.
struct Operation<'a> {
    op: Cursor<'a>,
    item: Cursor<'a>,
}

/// Every operation by endpoint name; of operations sharing a name, the first in document
/// order. A B-tree of small nodes, not one large sorted `Vec`: built after a large
/// document's contract is dropped, its nodes reuse the memory the allocator holds from it.
type Operations<'a> = BTreeMap<CompactString, Operation<'a>>;

/// Every operation by endpoint name (operationId, else `METHOD path`; webhooks and callbacks
/// named as the normalizer names them).
fn operations<'a>(tree: &'a SourceTree<'a>) -> Operations<'a> {
    let mut out = BTreeMap::new();
    let top = Cursor::root(tree);
    fn add<'a>(
        item: Cursor<'a>,
        name_of: &dyn Fn(&str) -> String,
        callbacks: bool,
        out: &mut Operations<'a>,
    ) {
        let item = deref(item);
        for method in METHODS {
            let Some(op) = item.child(method) else {
                continue;
            };
            let verb = method.to_ascii_uppercase();
            let name = op
                .str("operationId")
                .map_or_else(|| name_of(&verb), str::to_string);
            if callbacks {
                if let Some(cbs) = op.child("callbacks") {
                    for (cb_name, cb) in cbs.members() {
                        let cb = deref(cb);
                        for (expression, cb_item) in cb.members() {
                            let label = format!("{name}.{cb_name} {expression}");
                            add(
                                cb_item,
                                &|verb| format!("CALLBACK {label} {verb}"),
                                false,
                                out,
                            );
                        }
                    }
                }
            }
            out.entry(name.into()).or_insert(Operation {
                op,
                item: item.clone(),
            });
        }
    }
    if let Some(paths) = top.child("paths") {
        for (path, item) in paths.members() {
            if path.starts_with('/') {
                add(item, &|verb| format!("{verb} {path}"), true, &mut out);
            }
        }
    }
    if let Some(hooks) = top.child("webhooks") {
        for (hook, item) in hooks.members() {
            add(
                item,
                &|verb| format!("WEBHOOK {hook} {verb}"),
                false,
                &mut out,
            );
        }
    }
    out
}

fn openapi_endpoint<'a>(tree: &'a SourceTree<'a>, ops: &Operations<'a>, rest: &str) -> Cursor<'a> {
    let top = Cursor::root(tree);
    let Some((operation, rest)) = longest(rest, |name| ops.get(name)) else {
        // Removed: the path item when it survives, else the paths object.
        let item = rest
            .split_once(' ')
            .and_then(|(_, path)| longest(path, |p| top.child("paths")?.child(p)));
        return match item {
            Some((item, _)) => item,
            None => top.child("paths").unwrap_or(top),
        };
    };
    let op = &operation.op;
    let (segment, tail) = head(rest);
    match segment {
        "" => op.clone(),
        "parameters" => {
            let (location, named) = head(tail);
            openapi_parameter(operation, location, named)
                .unwrap_or_else(|| op.child("parameters").unwrap_or_else(|| op.clone()))
        }
        "request_body" => openapi_body(operation, tail).unwrap_or_else(|| op.clone()),
        "responses" => {
            let Some(responses) = op.child("responses") else {
                return op.clone();
            };
            let (status, more) = head(tail);
            match responses.child_ci(status) {
                Some(response) => openapi_response(deref(response), more),
                None => responses,
            }
        }
        "security" => op
            .child("security")
            .or_else(|| top.child("security"))
            .unwrap_or_else(|| op.clone()),
        "description" => op
            .child("description")
            .or_else(|| op.child("summary"))
            .unwrap_or_else(|| op.clone()),
        "path" => operation.item.clone(),
        other => op.child(other).unwrap_or_else(|| op.clone()),
    }
}

/// The parameters of an operation in the order the normalizer lets them override: operation
/// level first, then path level; each with its `$ref` followed.
fn parameters<'a>(operation: &Operation<'a>) -> Vec<Cursor<'a>> {
    let mut out = Vec::new();
    for owner in [&operation.op, &operation.item] {
        if let Some(list) = owner.child("parameters") {
            out.extend(list.elements().into_iter().map(deref));
        }
    }
    out
}

fn openapi_parameter<'a>(
    operation: &Operation<'a>,
    location: &str,
    named: &str,
) -> Option<Cursor<'a>> {
    let params = parameters(operation);
    let (param, more) = longest(named, |name| {
        params
            .iter()
            .find(|p| {
                p.str("in") == Some(location)
                    && p.str("name").is_some_and(|n| {
                        n == name || (location == "header" && n.eq_ignore_ascii_case(name))
                    })
            })
            .cloned()
    })?;
    Some(parameter_part(param, more))
}

/// Below a parameter (or header): `schema...` is its `schema` (3.x), the schema of its first
/// `content` entry, or the parameter itself (Swagger 2.0 keeps the schema keywords inline).
fn parameter_part<'a>(param: Cursor<'a>, more: &str) -> Cursor<'a> {
    let (segment, tail) = head(more);
    match segment {
        "" => param,
        "schema" => {
            let schema = param.child("schema").or_else(|| {
                let content = param.child("content")?;
                let media = *content.keys().first()?;
                content.child(media)?.child("schema")
            });
            match schema {
                Some(schema) => walk(schema, tail),
                None => walk(param, tail),
            }
        }
        other => param.child(other).unwrap_or(param),
    }
}

/// `content.<media>.schema...` below a 3.x request body or response.
fn content_part<'a>(owner: Cursor<'a>, tail: &str) -> Cursor<'a> {
    let Some(content) = owner.child("content") else {
        return owner;
    };
    match longest(tail, |media| content.child_ci(media)) {
        Some((media, more)) => {
            let (segment, rest) = head(more);
            match (segment, media.child("schema")) {
                ("schema", Some(schema)) => walk(schema, rest),
                _ => media,
            }
        }
        None => content,
    }
}

/// What follows `content.<media>.` for Swagger 2.0, whose media types come from `consumes` /
/// `produces` rather than the document's keys: the part after the first `.schema`.
fn after_swagger_media(tail: &str) -> Option<&str> {
    let rest = tail.strip_prefix("content.")?;
    let at = rest
        .match_indices(".schema")
        .map(|(i, _)| i)
        .find(|i| matches!(rest.as_bytes().get(i + 7), None | Some(b'.')))?;
    Some(rest.get(at + 8..).unwrap_or(""))
}

fn openapi_body<'a>(operation: &Operation<'a>, tail: &str) -> Option<Cursor<'a>> {
    let (segment, _) = head(tail);
    if let Some(body) = operation.op.child("requestBody") {
        let body = deref(body);
        return Some(match segment {
            "content" => content_part(body, tail.strip_prefix("content.").unwrap_or("")),
            "" => body,
            other => body.child(other).unwrap_or(body),
        });
    }
    // Swagger 2.0: the `body` parameter, or the `formData` fields as object properties.
    let params = parameters(operation);
    if let Some(body) = params.iter().find(|p| p.str("in") == Some("body")) {
        return Some(match after_swagger_media(tail) {
            Some(sub) => match body.child("schema") {
                Some(schema) => walk(schema, sub),
                None => body.clone(),
            },
            None => body.child(segment).unwrap_or_else(|| body.clone()),
        });
    }
    let form: Vec<&Cursor> = params
        .iter()
        .filter(|p| p.str("in") == Some("formData"))
        .collect();
    let first = form.first()?;
    let field = after_swagger_media(tail)
        .and_then(|sub| sub.strip_prefix("properties."))
        .and_then(|sub| {
            longest(sub, |name| {
                form.iter().find(|p| p.str("name") == Some(name)).copied()
            })
        });
    Some(match field {
        Some((param, more)) => walk(param.clone(), more),
        None => (*first).clone(),
    })
}

fn openapi_response<'a>(response: Cursor<'a>, more: &str) -> Cursor<'a> {
    let (segment, tail) = head(more);
    match segment {
        "content" => match response.child("content") {
            Some(_) => content_part(response, tail),
            // Swagger 2.0: one schema for every `produces` media type.
            None => match (after_swagger_media(more), response.child("schema")) {
                (Some(sub), Some(schema)) => walk(schema, sub),
                _ => response,
            },
        },
        "headers" => {
            let Some(headers) = response.child("headers") else {
                return response;
            };
            match longest(tail, |name| headers.child_ci(name)) {
                Some((header, rest)) => parameter_part(deref(header), rest),
                None => headers,
            }
        }
        "" => response,
        other => response.child(other).unwrap_or(response),
    }
}

fn openrpc_method<'a>(tree: &'a SourceTree<'a>, rest: &str) -> Cursor<'a> {
    let top = Cursor::root(tree);
    let Some(methods) = top.child("methods") else {
        return top;
    };
    let all: Vec<Cursor> = methods.elements().into_iter().map(deref).collect();
    let Some((method, rest)) = longest(rest, |name| {
        all.iter().find(|m| m.str("name") == Some(name)).cloned()
    }) else {
        return methods;
    };
    let params: Vec<Cursor> = match method.child("params") {
        Some(list) => list.elements().into_iter().map(deref).collect(),
        None => Vec::new(),
    };
    fn by_name<'a, 'r>(params: &[Cursor<'a>], named: &'r str) -> Option<(Cursor<'a>, &'r str)> {
        longest(named, |name| {
            params.iter().find(|p| p.str("name") == Some(name)).cloned()
        })
    }
    let (segment, tail) = head(rest);
    match segment {
        "" => method,
        "parameters" => {
            let (_, named) = head(tail);
            match by_name(&params, named) {
                Some((param, more)) => parameter_part(param, more),
                None => method.child("params").unwrap_or(method),
            }
        }
        "input_schema" => {
            let param = tail
                .strip_prefix("properties.")
                .and_then(|named| by_name(&params, named));
            match param {
                Some((param, more)) => match param.child("schema") {
                    Some(schema) => walk(schema, more),
                    None => param,
                },
                None => method.child("params").unwrap_or(method),
            }
        }
        "output_schema" => match method.child("result").map(|r| deref(r)) {
            Some(result) => match result.child("schema") {
                Some(schema) => walk(schema, tail),
                None => result,
            },
            None => method,
        },
        "responses" => {
            let Some(errors) = method.child("errors") else {
                return method;
            };
            let (status, _) = head(tail);
            let code = status.strip_prefix("error ").unwrap_or(status);
            errors
                .elements()
                .into_iter()
                .map(deref)
                .find(|e| e.tree.child(e.node, "code").and_then(|c| e.tree.scalar(c)) == Some(code))
                .unwrap_or(errors)
        }
        "description" => method
            .child("description")
            .or_else(|| method.child("summary"))
            .unwrap_or(method),
        "remote" => method.child("servers").unwrap_or(method),
        other => method.child(other).unwrap_or(method),
    }
}

/// The location in the new document (`bytes`, of `kind`) of each change, in order: the node
/// its source pointer names or, when the text has no such node, its nearest ancestor that it
/// has. `None` for every change of a kind without source pointers or a document that does not
/// parse.
pub fn locate_changes(kind: Kind, bytes: &[u8], changes: &[Change]) -> Vec<Option<Location>> {
    let none = || vec![None; changes.len()];
    if kind.decl().pointers.is_none() {
        return none();
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return none();
    };
    let Some(tree) = SourceTree::parse(text) else {
        return none();
    };
    let locator = Locator::new(kind, &tree);
    let pointers: Vec<String> = changes
        .iter()
        .map(|c| locator.change_pointer(c).unwrap_or_default())
        .collect();
    pointers
        .into_iter()
        .map(|pointer| {
            // The pointer names a node of the tree; should it not (a `$ref` spelled oddly),
            // its nearest ancestor that does.
            let mut at = pointer.as_str();
            loop {
                if let Some(node) = tree.resolve(at) {
                    return Some(Location {
                        pointer: at.to_string(),
                        position: tree.position(node),
                    });
                }
                at = at.rsplit_once('/')?.0;
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::diff::classify;
    use crate::core::normalize::normalize;

    /// The source pointer and line of every change from `old` to `new` (documents of `kind`),
    /// by rule id.
    fn located(kind: Kind, old: &str, new: &str) -> BTreeMap<String, (String, usize)> {
        let o = normalize(kind, "a.b", old.as_bytes()).unwrap();
        let n = normalize(kind, "a.b", new.as_bytes()).unwrap();
        let report = classify(&o, &n, &Default::default());
        let locations = locate_changes(kind, new.as_bytes(), &report.changes);
        report
            .changes
            .iter()
            .zip(locations)
            .map(|(c, l)| {
                let l = l.expect("located");
                (c.rule.clone(), (l.pointer, l.position.line))
            })
            .collect()
    }

    const SWAGGER: &str = r#"swagger: "2.0"
info: {title: t, version: "1"}
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - name: limit
          in: query
          type: integer
          maximum: 100
      responses:
        "200":
          description: ok
          schema:
            type: object
            properties:
              name: {type: string, maxLength: 10}
    post:
      operationId: createPet
      parameters:
        - name: body
          in: body
          schema:
            type: object
            properties:
              age: {type: integer, minimum: 0}
      responses:
        "201": {description: created}
"#;

    #[test]
    fn swagger_parameters_bodies_and_responses_are_located() {
        let new = SWAGGER
            .replace("maximum: 100", "maximum: 50")
            .replace("maxLength: 10}", "maxLength: 5}");
        let at = located(Kind::Openapi, SWAGGER, &new);
        assert_eq!(
            at["request-constraint-tightened"],
            ("/paths/~1pets/get/parameters/0/maximum".to_string(), 11)
        );
        assert_eq!(
            at["response-constraint-tightened"],
            (
                "/paths/~1pets/get/responses/200/schema/properties/name/maxLength".to_string(),
                18
            )
        );
        assert_eq!(at.len(), 2, "{at:?}");
        let raised = SWAGGER.replace("minimum: 0}", "minimum: 1}");
        let at = located(Kind::Openapi, SWAGGER, &raised);
        assert_eq!(
            at["request-constraint-tightened"],
            (
                "/paths/~1pets/post/parameters/0/schema/properties/age/minimum".to_string(),
                27
            )
        );
    }

    const RPC: &str = r##"{
  "openrpc": "1.2.6",
  "info": {"title": "t", "version": "1"},
  "methods": [
    {"name": "sum",
     "params": [{"$ref": "#/components/contentDescriptors/A"},
                {"name": "b", "schema": {"type": "integer", "maximum": 9}}],
     "result": {"name": "r", "schema": {"type": "integer"}}}
  ],
  "components": {"contentDescriptors": {"A": {"name": "a", "required": true,
    "schema": {"type": "integer",
               "maximum": 9}}}}
}"##;

    #[test]
    fn openrpc_params_and_results_are_located_through_their_refs() {
        let new = RPC
            .replace("\"maximum\": 9}}],", "\"maximum\": 5}}],")
            .replace(
                "               \"maximum\": 9}",
                "               \"maximum\": 3}",
            )
            .replace("{\"type\": \"integer\"}}}", "{\"type\": \"number\"}}}");
        let at = located(Kind::Openrpc, RPC, &new);
        assert_eq!(
            at["response-type-changed"],
            ("/methods/0/result/schema/type".to_string(), 8)
        );
        let tightened: Vec<&(String, usize)> = at
            .iter()
            .filter(|(rule, _)| rule.starts_with("request-constraint-tightened"))
            .map(|(_, l)| l)
            .collect();
        assert!(!tightened.is_empty(), "{at:?}");
        // Every change found a node below the method or the definition it reaches.
        for (pointer, _) in at.values() {
            assert!(
                pointer.starts_with("/methods/0") || pointer.starts_with("/components"),
                "{at:?}"
            );
        }
    }
}
