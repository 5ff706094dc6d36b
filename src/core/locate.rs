//! Source positions: the line and column of JSON pointers in a document's text.
//!
//! Computed only for the changes being rendered, never while normalizing: the model carries
//! no positions, so the normal diff path and the stored specs stay as small as they were.
//! [`SourceTree`] is the document's structure with where each node starts: one pass of a
//! small tokenizer over JSON text (keys and strings borrowed from the text, nothing decoded
//! unless escaped), or serde-saphyr's span events for YAML. A node reached through an object
//! member is placed at its key (`"maximum": 10`, `maximum: 10`), an array element at its
//! first character. Lines and columns count from 1; columns count Unicode code points
//! (SARIF's `unicodeCodePoints`).

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// Where a node starts in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// A change's place in the new document: the source node (a JSON pointer, `""` for the whole
/// document) and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub pointer: String,
    pub position: Position,
}

/// Splits a JSON pointer (`/paths/~1pets/get`) into its unescaped tokens.
pub fn pointer_tokens(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Escapes one token for a JSON pointer.
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The position of every pointer in `pointers` that exists in `text` (JSON when its first
/// non-blank character is `{` or `[`, else YAML). Pointers the document lacks are left out;
/// a document that does not parse yields none.
pub fn positions(text: &str, pointers: &[&str]) -> BTreeMap<String, Position> {
    let Some(tree) = SourceTree::parse(text) else {
        return BTreeMap::new();
    };
    pointers
        .iter()
        .filter_map(|p| Some((p.to_string(), tree.position(tree.resolve(p)?))))
        .collect()
}

/// A node of a [`SourceTree`].
pub type NodeId = usize;
const NONE: usize = usize::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    Array,
    String,
    /// A number, boolean or null (its text in `value`).
    Other,
}

struct Node<'t> {
    shape: Shape,
    /// The member name when the node is an object member.
    key: Option<Cow<'t, str>>,
    /// A scalar's text (strings unescaped).
    value: Option<Cow<'t, str>>,
    /// Byte offset of the key (members) or of the value (elements, the root).
    at: usize,
    first_child: usize,
    next_sibling: usize,
}

/// A parsed document's structure and where every node starts, for locating changes.
pub struct SourceTree<'t> {
    text: &'t str,
    nodes: Vec<Node<'t>>,
    lines: LineIndex,
}

impl<'t> SourceTree<'t> {
    /// JSON when the first non-blank character is `{` or `[`, else YAML; `None` when the
    /// document does not parse.
    pub fn parse(text: &'t str) -> Option<SourceTree<'t>> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut tree = SourceTree {
            text,
            nodes: Vec::new(),
            lines: LineIndex::new(text),
        };
        match text.trim_start().as_bytes().first() {
            Some(b'{') | Some(b'[') => {
                let mut walk = JsonWalk {
                    bytes: text.as_bytes(),
                    text,
                    pos: 0,
                    nodes: &mut tree.nodes,
                };
                walk.skip_ws();
                walk.value(None, 0)?;
            }
            _ => yaml_tree(text, &mut tree.nodes)?,
        }
        Some(tree)
    }

    pub fn root(&self) -> NodeId {
        0
    }

    pub fn is_object(&self, id: NodeId) -> bool {
        self.nodes.get(id).is_some_and(|n| n.shape == Shape::Object)
    }

    fn children(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let mut next = self.nodes.get(id).map_or(NONE, |n| n.first_child);
        std::iter::from_fn(move || {
            let here = next;
            next = self.nodes.get(here)?.next_sibling;
            Some(here)
        })
    }

    /// An object's members, in document order.
    pub fn members(&self, id: NodeId) -> impl Iterator<Item = (&str, NodeId)> + '_ {
        self.children(id)
            .filter_map(|c| Some((self.nodes[c].key.as_deref()?, c)))
    }

    /// The number of elements of an array (0 for anything else).
    pub fn len(&self, id: NodeId) -> usize {
        match self.nodes.get(id) {
            Some(n) if n.shape == Shape::Array => self.children(id).count(),
            _ => 0,
        }
    }

    /// A member by name, or an element by index.
    pub fn child(&self, id: NodeId, key: &str) -> Option<NodeId> {
        match self.nodes.get(id)?.shape {
            Shape::Object => self.members(id).find(|(k, _)| *k == key).map(|(_, c)| c),
            Shape::Array => self.children(id).nth(key.parse().ok()?),
            _ => None,
        }
    }

    /// A string's text.
    pub fn as_str(&self, id: NodeId) -> Option<&str> {
        let node = self.nodes.get(id)?;
        if node.shape == Shape::String {
            node.value.as_deref()
        } else {
            None
        }
    }

    /// A scalar's text as written (a string unescaped, a number's digits).
    pub fn scalar(&self, id: NodeId) -> Option<&str> {
        self.nodes.get(id)?.value.as_deref()
    }

    /// The node a JSON pointer names (`""`: the whole document; tokens may be
    /// percent-encoded, as in a `$ref`).
    pub fn resolve(&self, pointer: &str) -> Option<NodeId> {
        let mut id = self.root();
        self.nodes.first()?;
        for token in pointer_tokens(pointer) {
            id = self.child(id, &percent_decode(&token))?;
        }
        Some(id)
    }

    pub fn position(&self, id: NodeId) -> Position {
        let at = self.nodes.get(id).map_or(0, |n| n.at);
        self.lines.position(self.text, at)
    }
}

fn percent_decode(text: &str) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_or(Cow::Borrowed(text), Cow::Owned)
}

/// Byte offset → line and column.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    fn position(&self, text: &str, offset: usize) -> Position {
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        let start = self.starts[line - 1];
        let column = text
            .get(start..offset)
            .map_or(1, |prefix| prefix.chars().count() + 1);
        Position { line, column }
    }
}

/// One pass over JSON text into the tree. It trusts nothing: any unexpected byte ends the
/// parse (`None`), never a panic.
struct JsonWalk<'t, 'n> {
    bytes: &'t [u8],
    text: &'t str,
    pos: usize,
    nodes: &'n mut Vec<Node<'t>>,
}

impl<'t> JsonWalk<'t, '_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn push(&mut self, shape: Shape, key: Option<(Cow<'t, str>, usize)>) -> usize {
        let at = key.as_ref().map_or(self.pos, |(_, at)| *at);
        self.nodes.push(Node {
            shape,
            key: key.map(|(k, _)| k),
            value: None,
            at,
            first_child: NONE,
            next_sibling: NONE,
        });
        self.nodes.len() - 1
    }

    /// The value at the cursor, as a new node (its index).
    fn value(&mut self, key: Option<(Cow<'t, str>, usize)>, depth: usize) -> Option<usize> {
        if depth > crate::core::json::MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => {
                let id = self.push(Shape::Object, key);
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b'}' {
                    self.pos += 1;
                    return Some(id);
                }
                let mut last = NONE;
                loop {
                    self.skip_ws();
                    let at = self.pos;
                    let name = self.string()?;
                    self.skip_ws();
                    (self.peek()? == b':').then_some(())?;
                    self.pos += 1;
                    self.skip_ws();
                    let child = self.value(Some((name, at)), depth + 1)?;
                    self.link(id, &mut last, child);
                    self.skip_ws();
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b'}' => {
                            self.pos += 1;
                            return Some(id);
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                let id = self.push(Shape::Array, key);
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(id);
                }
                let mut last = NONE;
                loop {
                    self.skip_ws();
                    let child = self.value(None, depth + 1)?;
                    self.link(id, &mut last, child);
                    self.skip_ws();
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Some(id);
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => {
                let id = self.push(Shape::String, key);
                let text = self.string()?;
                self.nodes[id].value = Some(text);
                Some(id)
            }
            _ => {
                let id = self.push(Shape::Other, key);
                let start = self.pos;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.pos += 1;
                }
                (self.pos > start).then_some(())?;
                self.nodes[id].value = Some(Cow::Borrowed(self.text.get(start..self.pos)?));
                Some(id)
            }
        }
    }

    fn link(&mut self, parent: usize, last: &mut usize, child: usize) {
        match *last {
            NONE => self.nodes[parent].first_child = child,
            prev => self.nodes[prev].next_sibling = child,
        }
        *last = child;
    }

    /// A string at the cursor: borrowed from the text, decoded only when it has escapes.
    fn string(&mut self) -> Option<Cow<'t, str>> {
        (self.peek()? == b'"').then_some(())?;
        let start = self.pos;
        self.pos += 1;
        let mut escaped = false;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.pos += 2;
                }
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        if escaped {
            serde_json::from_str(self.text.get(start..self.pos)?)
                .ok()
                .map(Cow::Owned)
        } else {
            self.text.get(start + 1..self.pos - 1).map(Cow::Borrowed)
        }
    }
}

/// A YAML node with where it starts: keys keep their own span; scalars their text.
enum YamlPos {
    Leaf(Shape, Option<String>),
    Seq(Vec<serde_saphyr::Spanned<YamlPos>>),
    Map(
        Vec<(
            serde_saphyr::Spanned<String>,
            serde_saphyr::Spanned<YamlPos>,
        )>,
    ),
}

impl<'de> Deserialize<'de> for YamlPos {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PosVisitor;
        impl<'de> Visitor<'de> for PosVisitor {
            type Value = YamlPos;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E>(self) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, None))
            }
            fn visit_none<E>(self) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, None))
            }
            fn visit_bool<E>(self, v: bool) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, Some(v.to_string())))
            }
            fn visit_i64<E>(self, v: i64) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, Some(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, Some(v.to_string())))
            }
            fn visit_i128<E>(self, v: i128) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, Some(v.to_string())))
            }
            fn visit_u128<E>(self, v: u128) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, Some(v.to_string())))
            }
            fn visit_f64<E>(self, v: f64) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::Other, Some(v.to_string())))
            }
            fn visit_str<E>(self, v: &str) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::String, Some(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf(Shape::String, Some(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<YamlPos, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(YamlPos::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YamlPos, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(YamlPos::Map(entries))
            }
        }
        deserializer.deserialize_any(PosVisitor)
    }
}

fn span_start(location: &serde_saphyr::Location) -> usize {
    location
        .span()
        .byte_offset()
        .and_then(|o| usize::try_from(o).ok())
        .unwrap_or(0)
}

fn yaml_tree<'t>(text: &str, nodes: &mut Vec<Node<'t>>) -> Option<()> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: 20_000_000,
            max_events: 40_000_000,
            max_depth: crate::core::json::MAX_DEPTH,
            max_documents: 1,
        },
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: crate::core::json::MAX_YAML_ALIAS_REPLAY },
    };
    let root: serde_saphyr::Spanned<YamlPos> =
        serde_saphyr::from_str_with_options(text, options).ok()?;
    fn add<'t>(
        node: serde_saphyr::Spanned<YamlPos>,
        key: Option<String>,
        at: usize,
        nodes: &mut Vec<Node<'t>>,
    ) -> usize {
        let id = nodes.len();
        let (shape, value) = match &node.value {
            YamlPos::Leaf(shape, value) => (*shape, value.clone()),
            YamlPos::Seq(_) => (Shape::Array, None),
            YamlPos::Map(_) => (Shape::Object, None),
        };
        nodes.push(Node {
            shape,
            key: key.map(Cow::Owned),
            value: value.map(Cow::Owned),
            at,
            first_child: NONE,
            next_sibling: NONE,
        });
        let children: Vec<(Option<String>, usize, serde_saphyr::Spanned<YamlPos>)> =
            match node.value {
                YamlPos::Leaf(..) => Vec::new(),
                YamlPos::Seq(items) => items
                    .into_iter()
                    .map(|v| (None, span_start(&v.referenced), v))
                    .collect(),
                YamlPos::Map(entries) => entries
                    .into_iter()
                    .map(|(k, v)| (Some(k.value), span_start(&k.referenced), v))
                    .collect(),
            };
        let mut last = NONE;
        for (key, at, child) in children {
            let c = add(child, key, at, nodes);
            match last {
                NONE => nodes[id].first_child = c,
                prev => nodes[prev].next_sibling = c,
            }
            last = c;
        }
        id
    }
    let at = span_start(&root.referenced);
    add(root, None, at, nodes);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, pointer: &str) -> Option<(usize, usize)> {
        positions(text, &[pointer])
            .get(pointer)
            .map(|p| (p.line, p.column))
    }

    #[test]
    fn json_pointers_land_on_their_keys_and_elements() {
        let text = "{\n  \"a\": {\"b~/c\": 1,\n    \"d\": [10, {\"e\": \"x\\\"}\"}]},\n  \"é\": {\"f\": null}\n}\n";
        assert_eq!(at(text, ""), Some((1, 1)));
        assert_eq!(at(text, "/a"), Some((2, 3)));
        assert_eq!(at(text, "/a/b~0~1c"), Some((2, 9)));
        assert_eq!(at(text, "/a/d/1"), Some((3, 15)));
        assert_eq!(at(text, "/a/d/1/e"), Some((3, 16)));
        assert_eq!(at(text, "/é/f"), Some((4, 9)), "columns count code points");
        assert_eq!(at(text, "/a/zz"), None);
        assert_eq!(at("{\"a\": ", "/a"), None, "a truncated text");
    }

    #[test]
    fn yaml_pointers_land_on_their_keys_and_elements() {
        let text = "a:\n  b: 1\n  d:\n    - 10\n    - e: x\n\"q/r\": {s: 2}\n";
        assert_eq!(at(text, "/a"), Some((1, 1)));
        assert_eq!(at(text, "/a/b"), Some((2, 3)));
        assert_eq!(at(text, "/a/d/0"), Some((4, 7)));
        assert_eq!(at(text, "/a/d/1/e"), Some((5, 7)));
        assert_eq!(at(text, "/q~1r/s"), Some((6, 9)));
        assert_eq!(at(text, "/a/x"), None);
    }
}
