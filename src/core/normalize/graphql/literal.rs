//! GraphQL value literals and string tokens, decoded without panics.
//!
//! Default values reach us as GraphQL literal text twice over: in SDL as the source of the
//! `= value` node, in introspection as the printed `defaultValue` string. Both go through
//! [`parse_value`], so the same default gives the same JSON whichever way it arrived.
//! Enum values become JSON strings, Int/Float canonical JSON numbers.

use crate::core::json::canonical_number;
use serde_json::{Map, Value};

/// Nested lists/objects deeper than this in one literal are refused.
const MAX_LITERAL_DEPTH: usize = 64;

/// Parses one GraphQL input value literal (no variables) into JSON.
pub fn parse_value(text: &str) -> Result<Value, String> {
    let mut p = Lexer {
        chars: text.char_indices().collect(),
        pos: 0,
        text,
    };
    p.skip_ignored();
    let value = p.value(0)?;
    p.skip_ignored();
    if p.pos != p.chars.len() {
        return Err("trailing characters after a value literal".into());
    }
    Ok(value)
}

/// Decodes a GraphQL string token (`"..."` or `"""..."""`, quotes included).
pub fn decode_string_token(token: &str) -> Result<String, String> {
    let token = token.trim();
    if let Some(inner) = token
        .strip_prefix("\"\"\"")
        .and_then(|t| t.strip_suffix("\"\"\""))
    {
        return Ok(block_string_value(&inner.replace("\\\"\"\"", "\"\"\"")));
    }
    let inner = token
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .ok_or_else(|| "not a string token".to_string())?;
    unescape(inner)
}

fn unescape(inner: &str) -> Result<String, String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('/') => out.push('/'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let code = if chars.clone().next() == Some('{') {
                    chars.next();
                    let digits: String = chars.by_ref().take_while(|c| *c != '}').collect();
                    u32::from_str_radix(&digits, 16).map_err(|_| "bad \\u{...} escape")?
                } else {
                    let digits: String = chars.by_ref().take(4).collect();
                    let lead = u32::from_str_radix(&digits, 16).map_err(|_| "bad \\u escape")?;
                    if (0xD800..=0xDBFF).contains(&lead) {
                        let rest: String = chars.by_ref().take(6).collect();
                        let trail = rest
                            .strip_prefix("\\u")
                            .and_then(|d| u32::from_str_radix(d, 16).ok())
                            .filter(|t| (0xDC00..=0xDFFF).contains(t))
                            .ok_or("unpaired surrogate escape")?;
                        (lead - 0xD800) * 0x400 + (trail - 0xDC00) + 0x10000
                    } else {
                        lead
                    }
                };
                out.push(char::from_u32(code).ok_or("escape is not a character")?);
            }
            _ => return Err("invalid escape sequence in a string".into()),
        }
    }
    Ok(out)
}

/// The spec's BlockStringValue: common indentation and blank first/last lines removed.
fn block_string_value(raw: &str) -> String {
    let normalized = raw.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = normalized.split('\n').collect();
    let indent_of = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let common = lines
        .iter()
        .skip(1)
        .filter(|l| indent_of(l) < l.len())
        .map(|l| indent_of(l))
        .min();
    let mut out: Vec<&str> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| match common {
            Some(c) if i > 0 => l.get(c.min(l.len())..).unwrap_or(""),
            _ => l,
        })
        .collect();
    let blank = |l: &&str| l.trim_matches([' ', '\t']).is_empty();
    while out.first().is_some_and(blank) {
        out.remove(0);
    }
    while out.last().is_some_and(blank) {
        out.pop();
    }
    out.join("\n")
}

struct Lexer<'a> {
    chars: Vec<(usize, char)>,
    pos: usize,
    text: &'a str,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|(_, c)| *c)
    }

    fn offset(&self) -> usize {
        self.chars
            .get(self.pos)
            .map_or(self.text.len(), |(i, _)| *i)
    }

    fn skip_ignored(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | '\r' | ',' | '\u{feff}' => self.pos += 1,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n' && c != '\r') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<String, String> {
        let start = self.offset();
        if !self
            .peek()
            .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        {
            return Err(format!("expected a name at offset {start}"));
        }
        while self
            .peek()
            .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
        {
            self.pos += 1;
        }
        Ok(self.text[start..self.offset()].to_string())
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_LITERAL_DEPTH {
            return Err("value literal nested too deeply".into());
        }
        match self.peek() {
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ignored();
                    if self.peek() == Some(']') {
                        self.pos += 1;
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value(depth + 1)?);
                }
            }
            Some('{') => {
                self.pos += 1;
                let mut map = Map::new();
                loop {
                    self.skip_ignored();
                    if self.peek() == Some('}') {
                        self.pos += 1;
                        return Ok(Value::Object(map));
                    }
                    let key = self.name()?;
                    self.skip_ignored();
                    if self.peek() != Some(':') {
                        return Err("expected ':' in an object literal".into());
                    }
                    self.pos += 1;
                    self.skip_ignored();
                    let value = self.value(depth + 1)?;
                    if map.insert(key, value).is_some() {
                        return Err("duplicate field in an object literal".into());
                    }
                }
            }
            Some('"') => self.string(),
            Some('$') => Err("variables are not allowed in a default value".into()),
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(),
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let name = self.name()?;
                Ok(match name.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "null" => Value::Null,
                    _ => Value::String(name),
                })
            }
            _ => Err(format!("unexpected character at offset {}", self.offset())),
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.offset();
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        {
            self.pos += 1;
        }
        let lexeme = &self.text[start..self.offset()];
        canonical_number(lexeme)
            .map(Value::Number)
            .map_err(|e| e.to_string())
    }

    fn string(&mut self) -> Result<Value, String> {
        let start = self.offset();
        let rest = &self.text[start..];
        let end = if rest.starts_with("\"\"\"") {
            // Block string: ends at the first unescaped triple quote.
            let mut i = 3;
            loop {
                let tail = rest.get(i..).ok_or("unterminated block string")?;
                if tail.starts_with("\\\"\"\"") {
                    i += 4;
                } else if tail.starts_with("\"\"\"") {
                    break i + 3;
                } else {
                    i += tail
                        .chars()
                        .next()
                        .ok_or("unterminated block string")?
                        .len_utf8();
                }
            }
        } else {
            let mut escaped = false;
            let mut found = None;
            for (i, c) in rest.char_indices().skip(1) {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => {
                        found = Some(i + 1);
                        break;
                    }
                    '\n' | '\r' => break,
                    _ => {}
                }
            }
            found.ok_or("unterminated string")?
        };
        let token = &rest[..end];
        let end_offset = start + end;
        while self.offset() < end_offset {
            self.pos += 1;
        }
        decode_string_token(token).map(Value::String)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_become_json() {
        assert_eq!(
            parse_value("{field: CREATED_AT, direction: DESC, n: [1, 2.50, -0], s: \"a\\u00e9\", b: true, z: null}").unwrap(),
            json!({"field": "CREATED_AT", "direction": "DESC", "n": [1, 2.5, 0], "s": "aé", "b": true, "z": null})
        );
        assert!(parse_value("$var").is_err());
        assert!(parse_value("[1").is_err());
        assert!(parse_value(&"[".repeat(100)).is_err());
    }

    #[test]
    fn block_strings_are_dedented() {
        assert_eq!(
            decode_string_token("\"\"\"\n    Hello,\n      World!\n\n    Yours\n  \"\"\"").unwrap(),
            "Hello,\n  World!\n\nYours"
        );
        assert_eq!(decode_string_token("\"a\\\"b\"").unwrap(), "a\"b");
        assert!(decode_string_token("\"\\q\"").is_err());
    }
}
