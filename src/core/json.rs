//! Strict document parsing into `serde_json::Value` with exact numbers.
//!
//! Why a parser of our own for JSON: serde_json silently keeps the last of duplicate keys and,
//! without `arbitrary_precision`, rounds big numbers through f64, which makes canonicalization
//! non-idempotent (docs/reliability.md P8/P9). This parser rejects duplicate keys, enforces a
//! nesting limit, and stores every number as its canonical exact decimal (see [`canonical_number`]).
//! YAML goes through serde-saphyr with budgets against alias bombs, then through the same
//! number canonicalization.

use serde_json::{Map, Number, Value};
use std::fmt;

/// Deepest nesting of arrays/objects accepted in any document.
pub const MAX_DEPTH: usize = 128;

/// Events a YAML document may replay through aliases in total (alias-bomb guard).
pub const MAX_YAML_ALIAS_REPLAY: usize = 200_000;

/// Integers with up to this many digits are written in plain notation.
pub const MAX_PLAIN_INTEGER_DIGITS: i64 = 100;

/// Why a document could not be parsed. Messages name the problem and the byte offset,
/// never the document's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("invalid JSON at byte {offset}: {reason}")]
    Syntax { offset: usize, reason: &'static str },
    #[error("duplicate object key at byte {offset}")]
    DuplicateKey { offset: usize },
    #[error("nesting deeper than {MAX_DEPTH} levels at byte {offset}")]
    TooDeep { offset: usize },
    #[error("document is not valid UTF-8")]
    NotUtf8,
    #[error("invalid YAML: {0}")]
    Yaml(String),
    #[error("number {0} is not finite")]
    NonFinite(String),
}

/// Parses a document that is JSON or YAML. A leading UTF-8 BOM is stripped on purpose.
/// JSON is detected by its first non-blank byte (`{` or `[`); everything else is YAML.
pub fn parse_document(bytes: &[u8]) -> Result<Value, ParseError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8)?;
    match text.trim_start().as_bytes().first() {
        Some(b'{') | Some(b'[') => parse_json(text),
        _ => parse_yaml(text),
    }
}

/// Parses strict RFC 8259 JSON.
pub fn parse_json(text: &str) -> Result<Value, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        defer: None,
        deferred_at: None,
    };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.err("trailing characters after the document"));
    }
    Ok(value)
}

/// A JSON document parsed except the value of one top-level member, an object or an array,
/// which was checked (every error [`parse_json`] finds is found) but not built: [`Self::for_each_member`]
/// reads its members one at a time. Why: a large OpenAPI `paths` then never exists as one
/// tree beside the model built from it.
pub struct Deferred<'a> {
    /// The document without the deferred member.
    pub root: Value,
    text: &'a str,
    /// Where the deferred value starts (its `{` or `[`), when the member is present and one.
    start: Option<usize>,
}

impl Deferred<'_> {
    /// Whether the member was deferred (present, and an object or an array).
    pub fn is_deferred(&self) -> bool {
        self.start.is_some()
    }

    /// Parses the deferred array's elements in order, one at a time (nothing when the
    /// deferred value is an object).
    pub fn for_each_item<E: From<ParseError>>(
        &self,
        mut f: impl FnMut(Value) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(start) = self.start.filter(|_| self.is_array()) else {
            return Ok(());
        };
        let mut parser = self.parser_at(start);
        walk_stopping(|stop| {
            parser.elements(2, &mut |parser| {
                let value = parser.value(2)?;
                f(value).map_err(|e| stop(e, parser.pos))
            })
        })
    }

    /// A parser at the deferred value, which starts at `start`.
    fn parser_at(&self, start: usize) -> Parser<'_> {
        Parser {
            bytes: self.text.as_bytes(),
            pos: start,
            defer: None,
            deferred_at: None,
        }
    }

    /// Whether the deferred value is an array (else an object).
    pub fn is_array(&self) -> bool {
        self.start
            .is_some_and(|start| self.text.as_bytes().get(start) == Some(&b'['))
    }

    /// Parses the deferred object's members in document order, one at a time.
    pub fn for_each_member<E: From<ParseError>>(
        &self,
        f: impl FnMut(String, Value) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(start) = self.start.filter(|_| !self.is_array()) else {
            return Ok(());
        };
        self.parser_at(start).members(2, f)
    }
}

/// Runs a walk whose callback can fail with the caller's error `E`: `walk` is given `stop`,
/// which keeps that error and answers the parse error that ends the walk; the caller's error
/// is then answered instead of it.
fn walk_stopping<E: From<ParseError>>(
    walk: impl FnOnce(&mut dyn FnMut(E, usize) -> ParseError) -> Result<(), ParseError>,
) -> Result<(), E> {
    let mut failure = None;
    let result = walk(&mut |e, offset| {
        failure = Some(e);
        ParseError::Syntax {
            offset,
            reason: "stopped",
        }
    });
    match (result, failure) {
        (_, Some(e)) => Err(e),
        (Err(e), None) => Err(e.into()),
        (Ok(()), None) => Ok(()),
    }
}

/// Documents at least this large are read one `paths` item (one MCP tool) at a time: below it
/// the one-pass reading is faster (the deferring reading tokenizes the deferred member twice,
/// ~15% of normalizing on a 3 MB OpenAPI document) and its tree, ~28× the text, stays near
/// 100 MB.
pub const DEFER_FROM_BYTES: usize = 4 << 20;

/// Parses strict JSON as [`parse_json`] does, deferring the top-level member `key` when it is
/// an object or an array (see [`Deferred`]).
pub fn parse_json_deferring<'a>(text: &'a str, key: &str) -> Result<Deferred<'a>, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        defer: Some(key),
        deferred_at: None,
    };
    parser.skip_ws();
    let mut root = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.err("trailing characters after the document"));
    }
    let start = parser.deferred_at;
    if start.is_some() {
        // The placeholder that kept duplicate detection of the member itself.
        if let Value::Object(map) = &mut root {
            map.remove(key);
        }
    }
    Ok(Deferred { root, text, start })
}

/// Parses YAML 1.2 with budgets (nodes, events, aliases, depth), duplicate keys rejected,
/// and strict booleans (`yes` stays a string). Numbers keep their exact decimal value: the
/// parser's f64/i64 view is replaced by the scalar's own text, located through its span.
pub fn parse_yaml(text: &str) -> Result<Value, ParseError> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: 20_000_000,
            max_events: 40_000_000,
            max_depth: MAX_DEPTH,
            max_documents: 1,
        },
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::Error,
        strict_booleans: true,
        // Alias replay is where bombs explode; real schemas replay little.
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: MAX_YAML_ALIAS_REPLAY },
        // Overflowing literals like 1e400 reach us and are kept exactly; `.inf`/`.nan` are
        // refused below because they have no decimal value.
        non_finite_float_policy: serde_saphyr::options::NonFiniteFloatPolicy::PassThrough,
    };
    let node: serde_saphyr::Spanned<YamlNode> = serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| ParseError::Yaml(first_line(&e.to_string())))?;
    yaml_to_value(node, text)
}

/// A YAML node as the parser typed it; numbers are resolved against the source text later.
enum YamlNode {
    Null,
    Bool(bool),
    Number,
    String(String),
    Seq(Vec<serde_saphyr::Spanned<YamlNode>>),
    Map(Vec<(String, serde_saphyr::Spanned<YamlNode>)>),
}

impl<'de> serde::Deserialize<'de> for YamlNode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> serde::de::Visitor<'de> for NodeVisitor {
            type Value = YamlNode;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E>(self) -> Result<YamlNode, E> {
                Ok(YamlNode::Null)
            }
            fn visit_none<E>(self) -> Result<YamlNode, E> {
                Ok(YamlNode::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<YamlNode, E> {
                Ok(YamlNode::Bool(v))
            }
            fn visit_i64<E>(self, _: i64) -> Result<YamlNode, E> {
                Ok(YamlNode::Number)
            }
            fn visit_u64<E>(self, _: u64) -> Result<YamlNode, E> {
                Ok(YamlNode::Number)
            }
            fn visit_i128<E>(self, _: i128) -> Result<YamlNode, E> {
                Ok(YamlNode::Number)
            }
            fn visit_u128<E>(self, _: u128) -> Result<YamlNode, E> {
                Ok(YamlNode::Number)
            }
            fn visit_f64<E>(self, _: f64) -> Result<YamlNode, E> {
                // Non-finite spellings (`.inf`, `.nan`) fail when the text is read as a number.
                Ok(YamlNode::Number)
            }
            fn visit_str<E>(self, v: &str) -> Result<YamlNode, E> {
                Ok(YamlNode::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<YamlNode, E> {
                Ok(YamlNode::String(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<YamlNode, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(YamlNode::Seq(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<YamlNode, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, _>()? {
                    entries.push(entry);
                }
                Ok(YamlNode::Map(entries))
            }
        }
        deserializer.deserialize_any(NodeVisitor)
    }
}

/// Builds the JSON value, reading each number's text from the source by the span where it was
/// defined (an alias's value is read at its anchor).
fn yaml_to_value(node: serde_saphyr::Spanned<YamlNode>, text: &str) -> Result<Value, ParseError> {
    Ok(match node.value {
        YamlNode::Null => Value::Null,
        YamlNode::Bool(b) => Value::Bool(b),
        YamlNode::String(s) => Value::String(s),
        YamlNode::Number => {
            let span = node.defined.span();
            let lexeme = match (span.byte_offset(), span.byte_len()) {
                (Some(start), Some(len)) => usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(len).ok())
                    .and_then(|(start, len)| text.get(start..start.checked_add(len)?)),
                _ => None,
            }
            .ok_or_else(|| ParseError::Yaml("cannot locate a number in the source".into()))?;
            Value::Number(yaml_number(lexeme.trim())?)
        }
        YamlNode::Seq(items) => Value::Array(
            items
                .into_iter()
                .map(|item| yaml_to_value(item, text))
                .collect::<Result<_, _>>()?,
        ),
        YamlNode::Map(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                map.insert(key, yaml_to_value(value, text)?);
            }
            Value::Object(map)
        }
    })
}

/// A YAML 1.2 core-schema number (`+1`, `0x1F`, `0o17`, `.5`, `1_000` where the parser allows)
/// as a canonical exact number.
fn yaml_number(lexeme: &str) -> Result<Number, ParseError> {
    let bad = || {
        ParseError::Yaml(format!(
            "unsupported number {:?}",
            lexeme.chars().take(40).collect::<String>()
        ))
    };
    let (negative, body) = match lexeme.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, lexeme.strip_prefix('+').unwrap_or(lexeme)),
    };
    let radix = match body.get(..2) {
        Some("0x") => Some(16),
        Some("0o") => Some(8),
        Some("0b") => Some(2),
        _ => None,
    };
    if let Some(radix) = radix {
        let value = u128::from_str_radix(&body[2..].replace('_', ""), radix).map_err(|_| bad())?;
        return canonical_number(&format!("{}{value}", if negative { "-" } else { "" }));
    }
    let body = body.replace('_', "");
    let body = if body.starts_with('.') {
        format!("0{body}")
    } else {
        body
    };
    let body = body.strip_suffix('.').map(str::to_string).unwrap_or(body);
    canonical_number(&format!("{}{body}", if negative { "-" } else { "" })).map_err(|_| bad())
}

fn first_line(message: &str) -> String {
    message
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

/// Rewrites every number in a value to its canonical exact decimal.
pub fn canonicalize_numbers(value: Value) -> Result<Value, ParseError> {
    Ok(match value {
        Value::Number(n) => Value::Number(canonical_number(&n.to_string())?),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(canonicalize_numbers)
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(k, canonicalize_numbers(v)?);
            }
            Value::Object(out)
        }
        other => other,
    })
}

/// Canonical form of a JSON number lexeme by exact decimal value: `1`, `1.0`, `1e0` and
/// `10e-1` are all `1`; `-0` is `0`; digits are never rounded. The layout follows
/// ECMAScript's Number-to-string rules (as RFC 8785 does), applied to the exact digits:
/// plain notation when the decimal point sits within 21 digits, otherwise `d.ddde±N`; one
/// departure: integers up to [`MAX_PLAIN_INTEGER_DIGITS`] digits are written out in full, so a
/// big integer id reads as the integer it is.
pub fn canonical_number(lexeme: &str) -> Result<Number, ParseError> {
    let text = canonical_number_text(lexeme)?;
    text.parse::<Number>()
        .map_err(|_| ParseError::NonFinite(lexeme.chars().take(40).collect()))
}

fn canonical_number_text(lexeme: &str) -> Result<String, ParseError> {
    let bad = || ParseError::NonFinite(lexeme.chars().take(40).collect());
    let (negative, rest) = match lexeme.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, lexeme.strip_prefix('+').unwrap_or(lexeme)),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let mut exp: i64 = if exponent.is_empty() {
        0
    } else {
        exponent.parse::<i64>().map_err(|_| bad())?
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && frac_part.is_empty()
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut digits: String = format!("{int_part}{frac_part}");
    exp = exp.checked_sub(frac_part.len() as i64).ok_or_else(bad)?;
    let trimmed_start = digits.trim_start_matches('0').len();
    digits.drain(..digits.len() - trimmed_start);
    if digits.is_empty() {
        return Ok("0".to_string());
    }
    let without_trailing = digits.trim_end_matches('0').len();
    exp = exp
        .checked_add((digits.len() - without_trailing) as i64)
        .ok_or_else(bad)?;
    digits.truncate(without_trailing);
    // value = digits × 10^exp; `point` is where the decimal point falls after the first digit run.
    let n = digits.len() as i64;
    let point = n.checked_add(exp).ok_or_else(bad)?;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if n <= point && point <= MAX_PLAIN_INTEGER_DIGITS {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (point - n) as usize));
    } else if 0 < point && point <= 21 {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    } else if -6 < point && point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = point - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        out.push_str(&e.unsigned_abs().to_string());
    }
    Ok(out)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// A top-level member whose object value is checked, not built ([`Deferred`]).
    defer: Option<&'a str>,
    /// Where that object starts, once seen.
    deferred_at: Option<usize>,
}

impl Parser<'_> {
    fn err(&self, reason: &'static str) -> ParseError {
        ParseError::Syntax {
            offset: self.pos,
            reason,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        match self.bytes.get(self.pos) {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        let mut map = Map::new();
        self.object_with(depth, &mut |parser, key, key_offset| {
            let value = if depth == 1
                && parser.defer == Some(key.as_str())
                && parser.bytes.get(parser.pos) == Some(&b'[')
            {
                // An array: each element checked and dropped in turn.
                let start = parser.pos;
                parser.elements(depth + 1, &mut |parser| {
                    drop(parser.value(depth + 1)?);
                    Ok(())
                })?;
                if parser.deferred_at.is_none() {
                    parser.deferred_at = Some(start);
                }
                Value::Null
            } else if depth == 1
                && parser.defer == Some(key.as_str())
                && parser.bytes.get(parser.pos) == Some(&b'{')
            {
                // Checked member by member, then a placeholder (removed by the caller) so a
                // second member of that name is still a duplicate.
                let start = parser.pos;
                let mut seen = std::collections::HashSet::new();
                parser.object_with(depth + 1, &mut |parser, key, key_offset| {
                    drop(parser.value(depth + 1)?);
                    if !seen.insert(key) {
                        return Err(ParseError::DuplicateKey { offset: key_offset });
                    }
                    Ok(())
                })?;
                if parser.deferred_at.is_none() {
                    parser.deferred_at = Some(start);
                }
                Value::Null
            } else {
                parser.value(depth)?
            };
            if map.insert(key, value).is_some() {
                return Err(ParseError::DuplicateKey { offset: key_offset });
            }
            Ok(())
        })?;
        Ok(Value::Object(map))
    }

    /// The members of the object at `pos` (at nesting `depth`), each parsed and handed over in
    /// document order (the deferred reading of [`Deferred::for_each_member`]).
    fn members<E: From<ParseError>>(
        &mut self,
        depth: usize,
        mut f: impl FnMut(String, Value) -> Result<(), E>,
    ) -> Result<(), E> {
        walk_stopping(|stop| {
            self.object_with(depth, &mut |parser, key, _| {
                let value = parser.value(depth)?;
                f(key, value).map_err(|e| stop(e, parser.pos))
            })
        })
    }

    /// Walks the object at `pos`: `{`, then per member its key (and the key's offset) to
    /// `member`, which reads the value; then `}`. Syntax and depth are checked here.
    #[allow(clippy::type_complexity)]
    fn object_with(
        &mut self,
        depth: usize,
        member: &mut dyn FnMut(&mut Self, String, usize) -> Result<(), ParseError>,
    ) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep { offset: self.pos });
        }
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let key_offset = self.pos;
            let key = self.string()?;
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return Err(self.err("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            member(self, key, key_offset)?;
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        let mut items = Vec::new();
        self.elements(depth, &mut |parser| {
            items.push(parser.value(depth)?);
            Ok(())
        })?;
        Ok(Value::Array(items))
    }

    /// Walks the array at `pos` (at nesting `depth`): `[`, `element` reading each value, `]`.
    fn elements(
        &mut self,
        depth: usize,
        element: &mut dyn FnMut(&mut Self) -> Result<(), ParseError>,
    ) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep { offset: self.pos });
        }
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            element(self)?;
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let s = p.pos;
            while p.bytes.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos - s
        };
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.err("invalid number")),
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(self.err("invalid number fraction"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.err("invalid number exponent"));
            }
        }
        // The slice is ASCII digits and signs checked above, so it is valid UTF-8.
        let lexeme = std::str::from_utf8(&self.bytes[start..self.pos])
            .map_err(|_| self.err("invalid number"))?;
        Ok(Value::Number(canonical_number(lexeme)?))
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let chunk = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.err("truncated \\u escape"))?;
        let mut v: u16 = 0;
        for &b in chunk {
            let d = (b as char)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\u escape"))?;
            v = v * 16 + d as u16;
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Input is a &str and we stopped at an ASCII byte, so the run is whole UTF-8.
            out.push_str(
                std::str::from_utf8(&self.bytes[run_start..self.pos])
                    .map_err(|_| ParseError::NotUtf8)?,
            );
            match self.bytes.get(self.pos) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escape = *self
                        .bytes
                        .get(self.pos)
                        .ok_or_else(|| self.err("unterminated escape"))?;
                    self.pos += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&unit) {
                                if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return Err(self.err("lone surrogate"));
                                }
                                self.pos += 2;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(self.err("lone surrogate"));
                                }
                                let code = 0x10000
                                    + (((unit as u32) - 0xD800) << 10)
                                    + (low as u32 - 0xDC00);
                                char::from_u32(code).ok_or_else(|| self.err("invalid escape"))?
                            } else if (0xDC00..0xE000).contains(&unit) {
                                return Err(self.err("lone surrogate"));
                            } else {
                                char::from_u32(unit as u32)
                                    .ok_or_else(|| self.err("invalid escape"))?
                            };
                            out.push(c);
                        }
                        _ => return Err(self.err("invalid escape")),
                    }
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }
}

/// Writes `value` as canonical JSON (RFC 8785 layout): object keys sorted by UTF-16 code
/// units, no insignificant whitespace, numbers as already canonicalized by the parser.
pub fn to_canonical_string(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            // BTreeMap order is UTF-8 byte order; RFC 8785 wants UTF-16 code-unit order.
            // They differ only when a key holds characters above U+FFFF.
            if keys.iter().any(|k| k.chars().any(|c| c as u32 > 0xFFFF)) {
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            }
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// Appends `s` as a JSON string literal with RFC 8785 escaping.
pub fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    let mut run_start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so `i` is a char boundary.
        out.push_str(&s[run_start..i]);
        if escape.is_empty() {
            use fmt::Write;
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        run_start = i + 1;
    }
    out.push_str(&s[run_start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        to_canonical_string(&parse_json(text).unwrap())
    }

    #[test]
    fn numbers_are_canonical_by_exact_value() {
        assert_eq!(
            canon("[1, 1.0, 1e0, 10e-1, -0, 0.0, 100, 1E2]"),
            "[1,1,1,1,0,0,100,100]"
        );
        assert_eq!(canon("12345678901234567890123"), "12345678901234567890123");
        assert_eq!(
            canon("0.1000000000000000055511"),
            "0.1000000000000000055511"
        );
        assert_eq!(
            canon("[1e21, 1e-7, 0.000001, 1e400, -2.50e-3]"),
            "[1000000000000000000000,1e-7,0.000001,1e+400,-0.0025]"
        );
        assert_eq!(canon("123456789012345678901.5"), "123456789012345678901.5");
        assert_eq!(
            canon("1234567890123456789012.5"),
            "1.2345678901234567890125e+21"
        );
        assert_eq!(
            canon("[0.0000001234, 1.5e-7, 100e-2]"),
            "[1.234e-7,1.5e-7,1]"
        );
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        assert_eq!(
            parse_json(r#"{"a":1,"a":2}"#),
            Err(ParseError::DuplicateKey { offset: 7 })
        );
        assert!(matches!(
            parse_yaml("a: 1\na: 2\n"),
            Err(ParseError::Yaml(_))
        ));
    }

    #[test]
    fn depth_is_limited() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse_json(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(matches!(parse_json(&deep), Err(ParseError::TooDeep { .. })));
    }

    #[test]
    fn rejects_invalid_input() {
        for bad in [
            "{",
            "[1,]",
            "01",
            "1.",
            "\"\\ud800\"",
            "nul",
            "{\"a\" 1}",
            "NaN",
            "[1] x",
        ] {
            assert!(parse_json(bad).is_err(), "{bad} should fail");
        }
        assert_eq!(parse_document(b"\xff"), Err(ParseError::NotUtf8));
    }

    #[test]
    fn bom_is_stripped_and_yaml_matches_json() {
        let json = parse_document(b"\xEF\xBB\xBF{\"b\": [1.50, \"yes\"], \"a\": null}").unwrap();
        let yaml = parse_document(b"a: ~\nb:\n  - 1.5\n  - yes\n").unwrap();
        assert_eq!(to_canonical_string(&json), to_canonical_string(&yaml));
    }

    #[test]
    fn strings_escape_like_rfc8785_and_keys_sort_by_utf16() {
        assert_eq!(canon(r#""a\u0001\n\"\/é""#), "\"a\\u0001\\n\\\"/é\"");
        // RFC 8785 §3.2.3: U+1F600 (surrogates D83D..) sorts before U+FB33 in UTF-16 order.
        assert_eq!(
            canon("{\"\u{fb33}\":1,\"\u{1f600}\":2}"),
            "{\"\u{1f600}\":2,\"\u{fb33}\":1}"
        );
    }

    #[test]
    fn yaml_numbers_are_exact() {
        let v = parse_yaml("a: 12345678901234567890123\nb: 0.1000000000000000055511\nc: 1e400\nd: 0x1F\ne: -.5\nf: &x 2.50\ng: *x\nh: '7'\n").unwrap();
        assert_eq!(
            to_canonical_string(&v),
            r#"{"a":12345678901234567890123,"b":0.1000000000000000055511,"c":1e+400,"d":31,"e":-0.5,"f":2.5,"g":2.5,"h":"7"}"#
        );
        assert!(parse_yaml("a: .inf\n").is_err());
        assert!(parse_yaml("a: .nan\n").is_err());
    }

    #[test]
    fn yaml_alias_bomb_is_refused() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let prev = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        assert!(parse_yaml(&doc).is_err());
    }
}
