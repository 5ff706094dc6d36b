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
use std::collections::{BTreeMap, HashMap};
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
/// [`NONE`] as a node stores it.
const NO_NODE: u32 = u32::MAX;
/// Objects with at least this many members get a sorted index for [`SourceTree::child`]
/// (a scan per lookup is quadratic in a 200,000-path `paths`).
const INDEXED_FROM_MEMBERS: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    Array,
    String,
    /// A number, boolean or null (its text in `value`).
    Other,
}

/// Where a node's text is, in 12 bytes (a large document has millions of nodes): a byte
/// range of the document, or of the tree's buffer of decoded strings.
#[derive(Clone, Copy)]
enum Str {
    None,
    Text(u32, u32),
    Decoded(u32, u32),
}

struct Node {
    shape: Shape,
    /// The member name when the node is an object member.
    key: Str,
    /// A scalar's text (strings unescaped).
    value: Str,
    /// Byte offset of the key (members) or of the value (elements, the root).
    at: u32,
    first_child: u32,
    next_sibling: u32,
}

/// Nodes per segment of [`Nodes`]: 80 KB, under the allocator's threshold for mapping memory
/// of its own.
const SEGMENT: usize = 2048;

/// A tree's nodes in fixed-size segments, not one growing `Vec`: reading a large document never
/// reallocates tens of megabytes, and the segments reuse memory the allocator already holds
/// (`diff` builds the tree right after dropping both contracts).
#[derive(Default)]
struct Nodes {
    segments: Vec<Vec<Node>>,
    len: usize,
}

impl Nodes {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, node: Node) {
        match self.segments.last_mut() {
            Some(segment) if segment.len() < SEGMENT => segment.push(node),
            _ => {
                let mut segment = Vec::with_capacity(SEGMENT);
                segment.push(node);
                self.segments.push(segment);
            }
        }
        self.len += 1;
    }

    fn get(&self, id: usize) -> Option<&Node> {
        self.segments.get(id / SEGMENT)?.get(id % SEGMENT)
    }

    fn get_mut(&mut self, id: usize) -> Option<&mut Node> {
        self.segments.get_mut(id / SEGMENT)?.get_mut(id % SEGMENT)
    }

    fn iter(&self) -> impl Iterator<Item = &Node> {
        self.segments.iter().flatten()
    }
}

/// A parsed document's structure and where every node starts, for locating changes.
pub struct SourceTree<'t> {
    text: &'t str,
    nodes: Nodes,
    /// Strings that had to be decoded (escapes, YAML scalars), end to end.
    decoded: String,
    /// Members of large objects sorted by key (then document order): object → its members.
    indexes: HashMap<u32, Vec<u32>>,
    lines: LineIndex,
}

/// Text and decoded-string buffer a tree is built into.
struct Builder<'t, 'n> {
    text: &'t str,
    nodes: &'n mut Nodes,
    decoded: &'n mut String,
}

impl Builder<'_, '_> {
    /// A byte range of the document as a [`Str`].
    fn text_range(&self, start: usize, end: usize) -> Option<Str> {
        Some(Str::Text(
            u32::try_from(start).ok()?,
            u32::try_from(end).ok()?,
        ))
    }

    /// A decoded string, kept in the buffer.
    fn decoded(&mut self, text: &str) -> Option<Str> {
        let start = u32::try_from(self.decoded.len()).ok()?;
        self.decoded.push_str(text);
        Some(Str::Decoded(start, u32::try_from(self.decoded.len()).ok()?))
    }

    fn push(&mut self, shape: Shape, key: Str, at: usize) -> Option<usize> {
        self.nodes.push(Node {
            shape,
            key,
            value: Str::None,
            at: u32::try_from(at).ok()?,
            first_child: NO_NODE,
            next_sibling: NO_NODE,
        });
        let id = self.nodes.len() - 1;
        // Node ids are stored in 32 bits; NO_NODE is never an id.
        (id < NO_NODE as usize).then_some(id)
    }

    fn set_value(&mut self, id: usize, value: Str) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.value = value;
        }
    }

    fn link(&mut self, parent: usize, last: &mut usize, child: usize) {
        // Both are ids `push` answered, so they fit.
        let child32 = child as u32;
        let linked = match *last {
            NONE => self.nodes.get_mut(parent).map(|n| &mut n.first_child),
            prev => self.nodes.get_mut(prev).map(|n| &mut n.next_sibling),
        };
        if let Some(link) = linked {
            *link = child32;
        }
        *last = child;
    }
}

impl<'t> SourceTree<'t> {
    /// JSON when the first non-blank character is `{` or `[`, else YAML; `None` when the
    /// document does not parse.
    pub fn parse(text: &'t str) -> Option<SourceTree<'t>> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // Offsets are stored in 32 bits.
        u32::try_from(text.len()).ok()?;
        let mut tree = SourceTree {
            text,
            nodes: Nodes::default(),
            decoded: String::new(),
            indexes: HashMap::new(),
            lines: LineIndex::new(text),
        };
        let mut build = Builder {
            text,
            nodes: &mut tree.nodes,
            decoded: &mut tree.decoded,
        };
        match text.trim_start().as_bytes().first() {
            Some(b'{') | Some(b'[') => {
                let mut walk = JsonWalk {
                    bytes: text.as_bytes(),
                    pos: 0,
                    build,
                };
                walk.skip_ws();
                walk.value(Str::None, None, 0)?;
            }
            _ => yaml_tree(text, &mut build)?,
        }
        tree.index_large_objects();
        Some(tree)
    }

    fn str_of(&self, s: Str) -> Option<&str> {
        match s {
            Str::None => None,
            Str::Text(start, end) => self.text.get(start as usize..end as usize),
            Str::Decoded(start, end) => self.decoded.get(start as usize..end as usize),
        }
    }

    fn key_of(&self, id: usize) -> Option<&str> {
        self.str_of(self.nodes.get(id)?.key)
    }

    /// Sorts the members of every object of [`INDEXED_FROM_MEMBERS`] or more by key (stable:
    /// the first of equal keys first, as a scan finds it).
    fn index_large_objects(&mut self) {
        let mut indexes = HashMap::new();
        for (id, node) in self.nodes.iter().enumerate() {
            if node.shape != Shape::Object {
                continue;
            }
            if self.children(id).nth(INDEXED_FROM_MEMBERS - 1).is_none() {
                continue;
            }
            // Ids are below NO_NODE (`Builder::push`), so they fit.
            let mut members: Vec<u32> = self.children(id).map(|c| c as u32).collect();
            members.sort_by(|a, b| self.key_of(*a as usize).cmp(&self.key_of(*b as usize)));
            indexes.insert(id as u32, members);
        }
        self.indexes = indexes;
    }

    pub fn root(&self) -> NodeId {
        0
    }

    pub fn is_object(&self, id: NodeId) -> bool {
        self.nodes.get(id).is_some_and(|n| n.shape == Shape::Object)
    }

    fn children(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let mut next = self.nodes.get(id).map_or(NO_NODE, |n| n.first_child);
        std::iter::from_fn(move || {
            let here = next as usize;
            next = self.nodes.get(here)?.next_sibling;
            Some(here)
        })
    }

    /// An object's members, in document order.
    pub fn members(&self, id: NodeId) -> impl Iterator<Item = (&str, NodeId)> + '_ {
        self.children(id).filter_map(|c| Some((self.key_of(c)?, c)))
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
            Shape::Object => match u32::try_from(id).ok().and_then(|i| self.indexes.get(&i)) {
                Some(sorted) => {
                    let first = sorted.partition_point(|c| self.key_of(*c as usize) < Some(key));
                    let c = *sorted.get(first)? as usize;
                    (self.key_of(c) == Some(key)).then_some(c)
                }
                None => self.members(id).find(|(k, _)| *k == key).map(|(_, c)| c),
            },
            Shape::Array => self.children(id).nth(key.parse().ok()?),
            _ => None,
        }
    }

    /// A string's text.
    pub fn as_str(&self, id: NodeId) -> Option<&str> {
        let node = self.nodes.get(id)?;
        if node.shape == Shape::String {
            self.str_of(node.value)
        } else {
            None
        }
    }

    /// A scalar's text as written (a string unescaped, a number's digits).
    pub fn scalar(&self, id: NodeId) -> Option<&str> {
        self.str_of(self.nodes.get(id)?.value)
    }

    /// The node a JSON pointer names (`""`: the whole document; tokens may be
    /// percent-encoded, as in a `$ref`).
    pub fn resolve(&self, pointer: &str) -> Option<NodeId> {
        let mut id = self.root();
        self.nodes.get(0)?;
        for token in pointer_tokens(pointer) {
            id = self.child(id, &percent_decode(&token))?;
        }
        Some(id)
    }

    pub fn position(&self, id: NodeId) -> Position {
        let at = self.nodes.get(id).map_or(0, |n| n.at as usize);
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
    /// Characters before each block of [`CHAR_BLOCK`] bytes, so a column is counted over at
    /// most two partial blocks, not from the line's start (a minified document is one line).
    chars_before_block: Vec<usize>,
}

const CHAR_BLOCK: usize = 4096;

/// Whether a byte starts a character (is not a UTF-8 continuation byte).
fn starts_char(b: &u8) -> bool {
    (*b & 0xC0) != 0x80
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
        let mut chars_before_block = vec![0];
        let mut total = 0;
        for block in text.as_bytes().chunks(CHAR_BLOCK) {
            total += block.iter().filter(|b| starts_char(b)).count();
            chars_before_block.push(total);
        }
        LineIndex {
            starts,
            chars_before_block,
        }
    }

    /// Characters in `text[..offset]` (`offset` at most the text's length).
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / CHAR_BLOCK;
        let start = block * CHAR_BLOCK;
        let partial = text.as_bytes()[start..offset]
            .iter()
            .filter(|b| starts_char(b))
            .count();
        self.chars_before_block[block] + partial
    }

    fn position(&self, text: &str, offset: usize) -> Position {
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        let start = self.starts[line - 1];
        let column = match text.get(start..offset) {
            // A short line is counted directly, a long one through the block totals.
            Some(prefix) if prefix.len() <= CHAR_BLOCK => prefix.chars().count() + 1,
            Some(_) => self.chars_before(text, offset) - self.chars_before(text, start) + 1,
            None => 1,
        };
        Position { line, column }
    }
}

/// One pass over JSON text into the tree. It trusts nothing: any unexpected byte ends the
/// parse (`None`), never a panic.
struct JsonWalk<'t, 'n> {
    bytes: &'t [u8],
    pos: usize,
    build: Builder<'t, 'n>,
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

    fn push(&mut self, shape: Shape, key: Str, key_at: Option<usize>) -> Option<usize> {
        self.build.push(shape, key, key_at.unwrap_or(self.pos))
    }

    /// The value at the cursor, as a new node (its index); a member's `key` starts at
    /// `key_at`.
    fn value(&mut self, key: Str, key_at: Option<usize>, depth: usize) -> Option<usize> {
        if depth > crate::core::json::MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => {
                let id = self.push(Shape::Object, key, key_at)?;
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
                    let child = self.value(name, Some(at), depth + 1)?;
                    self.build.link(id, &mut last, child);
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
                let id = self.push(Shape::Array, key, key_at)?;
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(id);
                }
                let mut last = NONE;
                loop {
                    self.skip_ws();
                    let child = self.value(Str::None, None, depth + 1)?;
                    self.build.link(id, &mut last, child);
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
                let id = self.push(Shape::String, key, key_at)?;
                let text = self.string()?;
                self.build.set_value(id, text);
                Some(id)
            }
            _ => {
                let id = self.push(Shape::Other, key, key_at)?;
                let start = self.pos;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.pos += 1;
                }
                (self.pos > start).then_some(())?;
                let value = self.build.text_range(start, self.pos)?;
                self.build.set_value(id, value);
                Some(id)
            }
        }
    }

    /// A string at the cursor: a range of the text, decoded only when it has escapes.
    fn string(&mut self) -> Option<Str> {
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
            let decoded: String =
                serde_json::from_str(self.build.text.get(start..self.pos)?).ok()?;
            self.build.decoded(&decoded)
        } else {
            // Checked: the range is one the text has.
            self.build.text.get(start + 1..self.pos - 1)?;
            self.build.text_range(start + 1, self.pos - 1)
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

fn yaml_tree(text: &str, build: &mut Builder<'_, '_>) -> Option<()> {
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
    fn add(
        node: serde_saphyr::Spanned<YamlPos>,
        key: Option<String>,
        at: usize,
        build: &mut Builder<'_, '_>,
    ) -> Option<usize> {
        let (shape, value) = match &node.value {
            YamlPos::Leaf(shape, value) => (*shape, value.clone()),
            YamlPos::Seq(_) => (Shape::Array, None),
            YamlPos::Map(_) => (Shape::Object, None),
        };
        let key = match key {
            Some(key) => build.decoded(&key)?,
            None => Str::None,
        };
        let id = build.push(shape, key, at)?;
        if let Some(value) = value {
            let value = build.decoded(&value)?;
            build.set_value(id, value);
        }
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
            let c = add(child, key, at, build)?;
            build.link(id, &mut last, c);
        }
        Some(id)
    }
    let at = span_start(&root.referenced);
    add(root, None, at, build)?;
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

    /// A large object is looked up through its sorted index, a long line's columns through
    /// the block counts: both answer exactly what a scan answers (the first of duplicate keys,
    /// code points from the line's start), across block boundaries and multi-byte text.
    #[test]
    fn large_objects_and_long_lines_answer_as_a_scan_does() {
        let mut members: Vec<String> = (0..200)
            .map(|i| format!("\"k{i}\": {{\"v\": \"{}\"}}", "é".repeat(i % 7 + 12)))
            .collect();
        members.push("\"k5\": {\"dup\": true}".into());
        members.push("\"esc\\u0061ped\": 1".into());
        // One line of ~6 KB: offsets reach past the first 4,096-byte block.
        let text = format!("{{\"big\": {{{}}}}}", members.join(", "));
        assert!(text.len() > 2 * CHAR_BLOCK && !text.contains('\n'));
        let tree = SourceTree::parse(&text).unwrap();
        let big = tree.child(tree.root(), "big").unwrap();
        assert!(tree.indexes.contains_key(&(big as u32)));
        let scan = |key: &str| tree.members(big).find(|(k, _)| *k == key).map(|(_, c)| c);
        for key in ["k0", "k5", "k131", "k199", "escaped", "nope", ""] {
            assert_eq!(tree.child(big, key), scan(key), "{key}");
        }
        let k5 = tree.child(big, "k5").unwrap();
        assert!(tree.child(k5, "v").is_some(), "the first of two k5 members");
        for key in ["k0", "k77", "k150", "k199", "escaped"] {
            let offset = text
                .find(&format!("\"{}", if key == "escaped" { "esc" } else { key }))
                .unwrap();
            let expected = text[..offset].chars().count() + 1;
            let node = tree.child(big, key).unwrap();
            assert_eq!(
                tree.position(node),
                Position {
                    line: 1,
                    column: expected
                },
                "{key}"
            );
        }
    }
}
