//! Source positions: the line and column of JSON pointers in a document's text.
//!
//! Computed only for the changes being rendered, never while parsing: the model carries no
//! positions, so the normal diff path and the stored specs stay as small as they were. A
//! JSON document is walked by a small tokenizer that descends only into the members a wanted
//! pointer goes through and skips everything else; YAML goes through serde-saphyr's span
//! events. A node reached through an object member is placed at its key (`"maximum": 10`,
//! `maximum: 10`), an array element at its first character. Lines and columns count from 1;
//! columns count Unicode code points (SARIF's `unicodeCodePoints`).

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
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

/// The wanted pointers as a tree of tokens, so the walk knows which members to enter.
#[derive(Default)]
struct Wanted {
    here: bool,
    children: BTreeMap<String, Wanted>,
}

impl Wanted {
    fn new(pointers: &[&str]) -> Wanted {
        let mut root = Wanted::default();
        for pointer in pointers {
            let mut node = &mut root;
            for token in pointer_tokens(pointer) {
                node = node.children.entry(token).or_default();
            }
            node.here = true;
        }
        root
    }
}

/// The position of every pointer in `pointers` that exists in `text` (JSON when its first
/// non-blank character is `{` or `[`, else YAML). Pointers the document lacks are left out;
/// a document that does not parse yields none.
pub fn positions(text: &str, pointers: &[&str]) -> BTreeMap<String, Position> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let offsets: BTreeMap<String, usize> = match text.trim_start().as_bytes().first() {
        Some(b'{') | Some(b'[') => json_offsets(text, pointers),
        _ => yaml_offsets(text, pointers),
    };
    let lines = LineIndex::new(text);
    offsets
        .into_iter()
        .map(|(pointer, offset)| (pointer, lines.position(text, offset)))
        .collect()
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

fn json_offsets(text: &str, pointers: &[&str]) -> BTreeMap<String, usize> {
    let wanted = Wanted::new(pointers);
    let mut walk = JsonWalk {
        bytes: text.as_bytes(),
        pos: 0,
        path: Vec::new(),
        out: BTreeMap::new(),
    };
    walk.skip_ws();
    if wanted.here {
        walk.out.insert(String::new(), walk.pos);
    }
    // A malformed document stops the walk; what was found so far stands.
    let _ = walk.value(&wanted, 0);
    walk.out
}

/// A tokenizer over JSON text that records the offsets of wanted nodes. It trusts nothing:
/// any unexpected byte ends the walk (`None`), never a panic.
struct JsonWalk<'t> {
    bytes: &'t [u8],
    pos: usize,
    path: Vec<String>,
    out: BTreeMap<String, usize>,
}

impl JsonWalk<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn record(&mut self, token: &str, at: usize) {
        let mut pointer = String::new();
        for t in self.path.iter().map(String::as_str).chain([token]) {
            pointer.push('/');
            pointer.push_str(&escape_token(t));
        }
        self.out.insert(pointer, at);
    }

    /// Walks the value at the cursor, entering only members `wanted` names.
    fn value(&mut self, wanted: &Wanted, depth: usize) -> Option<()> {
        if wanted.children.is_empty() || depth > crate::core::json::MAX_DEPTH {
            return self.skip_value();
        }
        match self.peek()? {
            b'{' => {
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b'}' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip_ws();
                    let at = self.pos;
                    let key = self.string()?;
                    self.skip_ws();
                    (self.peek()? == b':').then_some(())?;
                    self.pos += 1;
                    self.skip_ws();
                    match wanted.children.get(&key) {
                        Some(child) => {
                            if child.here {
                                self.record(&key, at);
                            }
                            self.path.push(key);
                            self.value(child, depth + 1)?;
                            self.path.pop();
                        }
                        None => self.skip_value()?,
                    }
                    self.skip_ws();
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b'}' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(());
                }
                let mut index = 0usize;
                loop {
                    self.skip_ws();
                    let key = index.to_string();
                    match wanted.children.get(&key) {
                        Some(child) => {
                            if child.here {
                                self.record(&key, self.pos);
                            }
                            self.path.push(key);
                            self.value(child, depth + 1)?;
                            self.path.pop();
                        }
                        None => self.skip_value()?,
                    }
                    index += 1;
                    self.skip_ws();
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => self.skip_value(),
        }
    }

    /// A string at the cursor, unescaped (escapes are rare in keys: decoded by serde_json).
    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        self.skip_string()?;
        let raw = self.bytes.get(start..self.pos)?;
        let inner = raw.get(1..raw.len().checked_sub(1)?)?;
        if inner.contains(&b'\\') {
            serde_json::from_slice(raw).ok()
        } else {
            std::str::from_utf8(inner).ok().map(str::to_string)
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        (self.peek()? == b'"').then_some(())?;
        self.pos += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => self.pos += 2,
                _ => self.pos += 1,
            }
        }
    }

    /// Skips one value without looking inside it.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.pos += 1;
                }
                Some(())
            }
        }
    }
}

/// A YAML node with where it starts: keys keep their own span.
enum YamlPos {
    Leaf,
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
                Ok(YamlPos::Leaf)
            }
            fn visit_none<E>(self) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_bool<E>(self, _: bool) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_i128<E>(self, _: i128) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_u128<E>(self, _: u128) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<YamlPos, E> {
                Ok(YamlPos::Leaf)
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

fn span_start(location: &serde_saphyr::Location) -> Option<usize> {
    usize::try_from(location.span().byte_offset()?).ok()
}

fn yaml_offsets(text: &str, pointers: &[&str]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: 20_000_000,
            max_events: 40_000_000,
            max_depth: crate::core::json::MAX_DEPTH,
            max_documents: 1,
        },
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: crate::core::json::MAX_YAML_ALIAS_REPLAY },
    };
    let Ok(root) =
        serde_saphyr::from_str_with_options::<serde_saphyr::Spanned<YamlPos>>(text, options)
    else {
        return out;
    };
    for pointer in pointers {
        let mut node = &root;
        let mut at = span_start(&root.referenced);
        for token in pointer_tokens(pointer) {
            let next = match &node.value {
                YamlPos::Map(entries) => entries
                    .iter()
                    .find(|(k, _)| k.value == token)
                    .map(|(k, v)| (span_start(&k.referenced), v)),
                YamlPos::Seq(items) => token
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i))
                    .map(|v| (span_start(&v.referenced), v)),
                YamlPos::Leaf => None,
            };
            match next {
                Some((start, child)) => {
                    at = start;
                    node = child;
                }
                None => {
                    at = None;
                    break;
                }
            }
        }
        if let Some(at) = at {
            out.insert(pointer.to_string(), at);
        }
    }
    out
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
        assert_eq!(at("{\"a\": ", "/a"), Some((1, 2)), "a truncated text");
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
