//! Property tests of the pure core: canonical JSON is idempotent and exact, numbers are one
//! value however they are spelled, and a contract's fingerprint does not depend on key order,
//! whitespace or JSON vs YAML; a contract compared with itself is `identical`.

use proptest::prelude::*;
use proptest::test_runner::Config;
use schemawatch::core::diff::classify;
use schemawatch::core::fingerprint::{tool_fingerprint, SpecIndex};
use schemawatch::core::json::{canonical_number, parse_json, parse_yaml, to_canonical_string};
use schemawatch::core::model::{Compatibility, ToolSpec};
use schemawatch::core::normalize::openapi;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `cases` per property; no regression files are written into the source tree (a failure
/// prints its minimal input and seed instead).
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------------
// A tiny deterministic RNG for rendering choices (whitespace, escapes, key order), seeded by
// proptest so failures shrink and replay.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

fn rng(seed: u64) -> Rng {
    Rng(seed | 1)
}

// ---------------------------------------------------------------------------------------------
// Exact decimal value of a number lexeme, computed independently of the product: (negative,
// significant digits without leading/trailing zeros, exponent of the last digit). Zero is
// `(false, "", 0)` whatever its sign.

fn exact_value(lexeme: &str) -> (bool, String, i64) {
    let (negative, rest) = match lexeme.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, lexeme.strip_prefix('+').unwrap_or(lexeme)),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().unwrap()),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = format!("{int}{frac}");
    let mut exp = exp - frac.len() as i64;
    while digits.ends_with('0') {
        digits.pop();
        exp += 1;
    }
    let digits = digits.trim_start_matches('0').to_string();
    if digits.is_empty() {
        return (false, String::new(), 0);
    }
    (negative, digits, exp)
}

/// Writes the exact value `(negative, digits, exp)` in one of many valid JSON spellings.
fn spell(negative: bool, digits: &str, exp: i64, rng: &mut Rng) -> String {
    if digits.is_empty() {
        let zeros = ["0", "-0", "0.0", "0e0", "-0.00E+3", "0.000e-7"];
        return zeros[rng.below(zeros.len() as u64) as usize].to_string();
    }
    // Optionally pad with trailing zeros (compensated in the exponent) and leading zeros
    // after the decimal point.
    let pad = rng.below(4) as usize;
    let mut mantissa = format!("{digits}{}", "0".repeat(pad));
    let mut exp = exp - pad as i64;
    // Put the decimal point `point` digits from the right.
    let point = rng.below(mantissa.len() as u64 + 3) as usize;
    let text = if point == 0 {
        mantissa.clone()
    } else {
        if point >= mantissa.len() {
            mantissa = format!("{}{mantissa}", "0".repeat(point - mantissa.len() + 1));
        }
        exp += point as i64;
        let split = mantissa.len() - point;
        format!("{}.{}", &mantissa[..split], &mantissa[split..])
    };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    out.push_str(&text);
    if exp != 0 || rng.chance(3) {
        out.push(if rng.chance(2) { 'e' } else { 'E' });
        if exp >= 0 && rng.chance(2) {
            out.push('+');
        }
        // JSON allows leading zeros in the exponent.
        let _ = write!(
            out,
            "{}{}",
            if exp < 0 { "-" } else { "" },
            "0".repeat(rng.below(2) as usize)
        );
        let _ = write!(out, "{}", exp.unsigned_abs());
    }
    out
}

fn canonical_text(lexeme: &str) -> String {
    canonical_number(lexeme)
        .unwrap_or_else(|e| panic!("{lexeme}: {e}"))
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// Random JSON documents, rendered as text with random whitespace and string escapes.

#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    /// A valid JSON number lexeme.
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(BTreeMap<String, J>),
}

fn number_lexeme() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1000i64..1000).prop_map(|n| n.to_string()),
        "-?[1-9][0-9]{15,40}",
        "-?(0|[1-9][0-9]{0,4})\\.[0-9]{1,22}",
        "-?[1-9](\\.[0-9]{1,6})?[eE][+-]?[0-9]{1,3}",
        "-?0(\\.0{1,3})?([eE][+-]?[0-9])?",
        prop::sample::select(vec![
            "1",
            "1.0",
            "1e0",
            "10e-1",
            "-0",
            "1.50",
            "1e5",
            "100e-2",
            "0.1000000000000000055511",
            "12345678901234567890123",
            "1E+2",
            "-2.50e-3",
            "1e21",
            "1e-7",
            "123456789012345678901.5",
        ])
        .prop_map(str::to_string),
    ]
}

fn string_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _./{}-]{0,12}",
        // Any Unicode scalar values, controls included.
        any::<String>(),
        prop::collection::vec(
            prop::sample::select(vec![
                "\"", "\\", "/", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}",
                "é", "ß", "\u{2028}", "\u{feff}", "\u{fb33}", "😀", "𝄞", "中文", "a",
            ]),
            0..8
        )
        .prop_map(|parts| parts.concat()),
    ]
}

fn json_tree() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        number_lexeme().prop_map(J::Num),
        string_value().prop_map(J::Str),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Arr),
            prop::collection::btree_map(string_value(), inner, 0..6).prop_map(J::Obj),
        ]
    })
}

/// Writes a JSON string literal, escaping at random. With `yaml_safe`, every character YAML
/// does not allow raw in a double-quoted scalar (controls, DEL, C1, BOM, surrogates' cousins)
/// is escaped: JSON text is YAML flow syntax only when it has no such raw characters.
fn write_string(s: &str, rng: &mut Rng, yaml_safe: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if rng.chance(2) => out.push_str("\\/"),
            '\n' if rng.chance(2) => out.push_str("\\n"),
            '\t' if rng.chance(2) => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (yaml_safe && !yaml_printable(c)) || rng.chance(4) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if rng.chance(2) {
                        let _ = write!(out, "\\u{unit:04x}");
                    } else {
                        let _ = write!(out, "\\u{unit:04X}");
                    }
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Characters a YAML double-quoted scalar may hold unescaped (YAML 1.2 `c-printable`, minus
/// the line/paragraph separators and the BOM, which some parsers treat specially).
fn yaml_printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn ws(rng: &mut Rng, out: &mut String) {
    for _ in 0..rng.below(3) {
        out.push([' ', '\n', '\t', '\r'][rng.below(4) as usize]);
    }
}

fn render(j: &J, rng: &mut Rng, out: &mut String) {
    ws(rng, out);
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(lexeme) => out.push_str(lexeme),
        J::Str(s) => write_string(s, rng, false, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                render(item, rng, out);
            }
            ws(rng, out);
            out.push(']');
        }
        J::Obj(map) => {
            // Keys in a random order.
            let mut entries: Vec<(&String, &J)> = map.iter().collect();
            for i in (1..entries.len()).rev() {
                entries.swap(i, rng.below(i as u64 + 1) as usize);
            }
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                write_string(k, rng, false, out);
                ws(rng, out);
                out.push(':');
                render(v, rng, out);
            }
            ws(rng, out);
            out.push('}');
        }
    }
    ws(rng, out);
}

/// The parsed value holds exactly what the tree says: same strings, same keys, same exact
/// numbers (checked with [`exact_value`], independently of the product's canonical form).
fn assert_same(j: &J, v: &Value) {
    match (j, v) {
        (J::Null, Value::Null) => {}
        (J::Bool(a), Value::Bool(b)) => assert_eq!(a, b),
        (J::Num(lexeme), Value::Number(n)) => {
            assert_eq!(
                exact_value(lexeme),
                exact_value(&n.to_string()),
                "{lexeme} -> {n}"
            )
        }
        (J::Str(a), Value::String(b)) => assert_eq!(a, b),
        (J::Arr(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len());
            a.iter().zip(b).for_each(|(x, y)| assert_same(x, y));
        }
        (J::Obj(a), Value::Object(b)) => {
            assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
            a.iter().for_each(|(k, x)| assert_same(x, &b[k]));
        }
        (j, v) => panic!("{j:?} parsed as {v:?}"),
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// to_canonical_string(parse_json(to_canonical_string(v))) == to_canonical_string(v), and
    /// parsing keeps strings, keys and exact number values.
    #[test]
    fn canonicalization_is_idempotent_and_exact(tree in json_tree(), seed in any::<u64>()) {
        let mut text = String::new();
        render(&tree, &mut rng(seed), &mut text);
        let value = parse_json(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        assert_same(&tree, &value);
        let canonical = to_canonical_string(&value);
        let reparsed = parse_json(&canonical)
            .map_err(|e| TestCaseError::fail(format!("{e}: {canonical}")))?;
        prop_assert_eq!(&to_canonical_string(&reparsed), &canonical);
        prop_assert_eq!(&reparsed, &value);
        // No insignificant whitespace outside strings: the compact serde_json rendering of the
        // same value has the same length.
        prop_assert_eq!(canonical.len(), serde_json::to_string(&reparsed).unwrap().len());
    }

    /// Every spelling of one exact value canonicalizes to one text, which has that value.
    #[test]
    fn number_spellings_canonicalize_equal(
        negative in any::<bool>(),
        digits in "[1-9]([0-9]{0,30}[1-9])?",
        exp in -40i64..40,
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let first = spell(negative, &digits, exp, &mut rng);
        let canonical = canonical_text(&first);
        prop_assert_eq!(exact_value(&canonical), (negative, digits.clone(), exp));
        prop_assert_eq!(&canonical_text(&canonical), &canonical);
        for _ in 0..6 {
            let other = spell(negative, &digits, exp, &mut rng);
            prop_assert_eq!(&canonical_text(&other), &canonical, "{} vs {}", first, other);
            let parsed = parse_json(&other)
                .map_err(|e| TestCaseError::fail(format!("{e}: {other}")))?;
            prop_assert_eq!(to_canonical_string(&parsed), canonical.clone());
        }
    }
}

#[test]
fn one_value_many_spellings() {
    let one = [
        "1", "1.0", "1e0", "10e-1", "1.000", "0.1e1", "100E-2", "1E+0", "1e00",
    ];
    for lexeme in one {
        assert_eq!(canonical_text(lexeme), "1", "{lexeme}");
        assert_eq!(to_canonical_string(&parse_json(lexeme).unwrap()), "1");
    }
    for lexeme in ["-0", "0.0", "-0.0e-5", "0e10"] {
        assert_eq!(canonical_text(lexeme), "0", "{lexeme}");
    }
    assert_eq!(canonical_text("1.50"), "1.5");
    assert_eq!(canonical_text("1e5"), "100000");
    assert_eq!(
        to_canonical_string(&parse_json("[1, 1.0, 1e0, 10e-1]").unwrap()),
        "[1,1,1,1]"
    );
}

/// YAML numbers must be as exact as JSON numbers (issue 2: "nothing is rounded through f64").
///
/// KNOWN PRODUCT BUG (fails today): `parse_yaml` lets serde-saphyr turn numbers into
/// i64/u64/f64 before `canonicalize_numbers`, so a big integer or a long decimal in a YAML
/// document is rounded, and the same contract in JSON and YAML gets different fingerprints
/// (e.g. `maximum: 12345678901234567890123` or an `example`/`default`/`enum` value).
/// `1e400` is accepted in JSON but rejected in YAML ("non-finite float").
#[test]
fn yaml_numbers_are_as_exact_as_json_numbers() {
    let mut wrong = Vec::new();
    for lexeme in [
        "12345678901234567890123",
        "0.1000000000000000055511",
        "18446744073709551616",
        "-9223372036854775809",
        "1e400",
        "1.50",
        "123456789012345678",
    ] {
        let json = parse_json(&format!("{{\"a\": {lexeme}}}")).map(|v| to_canonical_string(&v));
        let yaml = parse_yaml(&format!("a: {lexeme}\n")).map(|v| to_canonical_string(&v));
        if json != yaml {
            wrong.push(format!("{lexeme}: JSON {json:?}, YAML {yaml:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "YAML numbers differ from JSON:\n{}",
        wrong.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Random small but valid OpenAPI 3.0 documents.

const SCHEMA_NAMES: [&str; 3] = ["Pet", "Owner", "Error"];
const PATHS: [&str; 6] = [
    "/pets",
    "/pets/{petId}",
    "/owners/{ownerId}/pets/{petId}",
    "/stores",
    "/v1/items/{item-id}",
    "/search",
];
const METHODS: [&str; 5] = ["get", "post", "put", "delete", "patch"];

/// Numbers that f64 represents exactly as written (YAML parsing rounds others today; see
/// `yaml_numbers_are_as_exact_as_json_numbers`).
fn small_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..1000).prop_map(Value::from),
        prop::sample::select(vec!["0.5", "1.25", "2.5", "0.01", "1e3", "100"])
            .prop_map(|s| parse_json(s).unwrap()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z][a-zA-Z0-9 ]{0,16}",
        1 => string_value(),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        (small_number(), any::<bool>()).prop_map(|(max, nullable)| {
            let mut s = json!({"type": "string", "maxLength": max});
            if nullable {
                s["nullable"] = true.into();
            }
            s
        }),
        (small_number(), small_number())
            .prop_map(|(min, max)| json!({"type": "integer", "minimum": min, "maximum": max})),
        small_number().prop_map(|m| json!({"type": "number", "multipleOf": m})),
        Just(json!({"type": "boolean"})),
        prop::collection::btree_set(text(), 1..4)
            .prop_map(|values| json!({"type": "string", "enum": values})),
        (0..SCHEMA_NAMES.len())
            .prop_map(|i| json!({"$ref": format!("#/components/schemas/{}", SCHEMA_NAMES[i])})),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map("[a-z][a-zA-Z_]{0,8}", inner.clone(), 1..4),
                any::<u8>(),
                proptest::option::of(text()),
            )
                .prop_map(|(props, mask, description)| {
                    let required: Vec<&String> = props
                        .keys()
                        .enumerate()
                        .filter(|(i, _)| mask & (1 << i) != 0)
                        .map(|(_, k)| k)
                        .collect();
                    let mut s = json!({"type": "object", "properties": props});
                    if !required.is_empty() {
                        s["required"] = json!(required);
                    }
                    if let Some(d) = description {
                        s["description"] = d.into();
                    }
                    s
                }),
            (inner, small_number())
                .prop_map(|(items, max)| json!({"type": "array", "items": items, "maxItems": max})),
        ]
    })
}

#[derive(Debug, Clone)]
struct OpGen {
    method_mask: u8,
    with_operation_id: bool,
    query: BTreeMap<String, (bool, Value)>,
    header: Option<Value>,
    body: Option<(bool, Value)>,
    response: Value,
    with_default: bool,
    summary: Option<String>,
}

fn operation_gen() -> impl Strategy<Value = OpGen> {
    (
        1u8..32,
        any::<bool>(),
        prop::collection::btree_map("[a-z]{1,6}", (any::<bool>(), schema()), 0..3),
        proptest::option::of(schema()),
        proptest::option::of((any::<bool>(), schema())),
        schema(),
        any::<bool>(),
        proptest::option::of(text()),
    )
        .prop_map(
            |(
                method_mask,
                with_operation_id,
                query,
                header,
                body,
                response,
                with_default,
                summary,
            )| OpGen {
                method_mask,
                with_operation_id,
                query,
                header,
                body,
                response,
                with_default,
                summary,
            },
        )
}

fn openapi_doc() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(
            prop::sample::select(vec![
                "https://api.example.com/v1",
                "https://eu.example.com",
                "/relative",
            ]),
            0..3,
        ),
        prop::collection::vec(schema(), SCHEMA_NAMES.len()),
        prop::collection::btree_map(0..PATHS.len(), operation_gen(), 1..4),
        text(),
        "[0-9]\\.[0-9]{1,2}",
    )
        .prop_map(|(servers, schemas, paths, title, version)| {
            let mut path_items = Map::new();
            for (p, op) in paths {
                let template = PATHS[p];
                let mut item = Map::new();
                let path_params: Vec<Value> = template
                    .split('{')
                    .skip(1)
                    .map(|rest| {
                        let name = &rest[..rest.find('}').unwrap()];
                        json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
                    })
                    .collect();
                for (m, method) in METHODS.iter().enumerate() {
                    if op.method_mask & (1 << m) == 0 {
                        continue;
                    }
                    let mut parameters = path_params.clone();
                    for (name, (required, schema)) in &op.query {
                        parameters.push(json!({"name": name, "in": "query", "required": required, "schema": schema}));
                    }
                    if let Some(schema) = &op.header {
                        parameters.push(json!({"name": "X-Trace", "in": "header", "schema": schema}));
                    }
                    let mut responses = json!({
                        "200": {"description": "ok", "content": {"application/json": {"schema": op.response}}}
                    });
                    if op.with_default {
                        responses["default"] = json!({"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
                    }
                    let mut operation = json!({"parameters": parameters, "responses": responses});
                    if op.with_operation_id {
                        operation["operationId"] = format!("{method}Op{p}").into();
                    }
                    if let Some(summary) = &op.summary {
                        operation["summary"] = summary.clone().into();
                    }
                    if let (Some((required, schema)), true) = (&op.body, *method != "get") {
                        operation["requestBody"] = json!({"required": required, "content": {"application/json": {"schema": schema}}});
                    }
                    item.insert(method.to_string(), operation);
                }
                path_items.insert(template.to_string(), Value::Object(item));
            }
            let schemas: Map<String, Value> = SCHEMA_NAMES
                .iter()
                .zip(schemas)
                .map(|(n, s)| (n.to_string(), s))
                .collect();
            json!({
                "openapi": "3.0.3",
                "info": {"title": title, "version": version},
                "servers": servers.iter().map(|u| json!({"url": u})).collect::<Vec<_>>(),
                "paths": path_items,
                "components": {"schemas": schemas},
            })
        })
}

// ---------------------------------------------------------------------------------------------
// Emitters: JSON with shuffled keys and optional pretty-printing, and block-style YAML.

fn shuffled_keys<'a>(map: &'a Map<String, Value>, rng: &mut Rng) -> Vec<&'a String> {
    let mut keys: Vec<&String> = map.keys().collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    keys
}

fn emit_json(v: &Value, rng: &mut Rng, pretty: bool, depth: usize, out: &mut String) {
    // YAML-safe escaping, so that the same text can also be fed to the YAML parser.
    let newline = |out: &mut String, depth: usize| {
        if pretty {
            out.push('\n');
            out.push_str(&"  ".repeat(depth));
        }
    };
    match v {
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, k) in shuffled_keys(map, rng).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_string(k, rng, true, out);
                out.push_str(if pretty { ": " } else { ":" });
                emit_json(&map[k], rng, pretty, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                emit_json(item, rng, pretty, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::String(s) => write_string(s, rng, true, out),
        Value::Number(n) => {
            let (negative, digits, exp) = exact_value(&n.to_string());
            out.push_str(&spell(negative, &digits, exp, rng));
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A YAML double-quoted scalar: printable characters as they are, everything else escaped.
fn yaml_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if yaml_printable(c) => out.push(c),
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
}

fn yaml_scalar(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => yaml_string(s, out),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        other => out.push_str(&other.to_string()),
    }
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

/// Block-style YAML: nested mappings and sequences by indentation, every string (keys too)
/// double-quoted, keys in a random order.
fn emit_yaml(v: &Value, rng: &mut Rng, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) if !map.is_empty() => {
            for k in shuffled_keys(map, rng) {
                out.push_str(&pad);
                yaml_string(k, out);
                out.push(':');
                let child = &map[k];
                if is_block(child) {
                    out.push('\n');
                    emit_yaml(child, rng, indent + 2, out);
                } else {
                    out.push(' ');
                    yaml_scalar(child, out);
                    out.push('\n');
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&pad);
                out.push('-');
                if is_block(item) {
                    out.push('\n');
                    emit_yaml(item, rng, indent + 2, out);
                } else {
                    out.push(' ');
                    yaml_scalar(item, out);
                    out.push('\n');
                }
            }
        }
        scalar => {
            out.push_str(&pad);
            yaml_scalar(scalar, out);
            out.push('\n');
        }
    }
}

fn normalize(text: &str, what: &str) -> Result<ToolSpec, TestCaseError> {
    openapi::normalize("prop.api", text.as_bytes())
        .map_err(|e| TestCaseError::fail(format!("{what} does not normalize: {e}\n{text}")))
}

fn endpoint_fingerprints(spec: &ToolSpec) -> Vec<String> {
    let index = SpecIndex::new(spec);
    spec.endpoints
        .iter()
        .map(|e| index.endpoint_fingerprint(e))
        .collect()
}

proptest! {
    #![proptest_config(config(96))]

    /// One contract, five texts: compact JSON in sorted order, pretty JSON with shuffled keys
    /// and respelled numbers and escapes, JSON read by the YAML parser (flow style), and
    /// block-style YAML with shuffled keys. Same spec, same fingerprints; and each compared
    /// with itself or another spelling is `identical` with no changes.
    #[test]
    fn fingerprint_ignores_key_order_whitespace_and_json_vs_yaml(
        doc in openapi_doc(),
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let compact = serde_json::to_string(&doc).unwrap();
        let mut pretty = String::new();
        emit_json(&doc, &mut rng, true, 0, &mut pretty);
        let mut shuffled_compact = String::new();
        emit_json(&doc, &mut rng, false, 0, &mut shuffled_compact);
        // A leading comment makes parse_document take the YAML path for JSON (flow) text.
        let flow_yaml = format!("# flow style\n{shuffled_compact}\n");
        let mut block_yaml = String::from("# block style\n");
        emit_yaml(&doc, &mut rng, 0, &mut block_yaml);

        let reference = normalize(&compact, "compact JSON")?;
        prop_assert!(!reference.endpoints.is_empty());
        let reference_fp = tool_fingerprint(&reference);
        let reference_endpoints = endpoint_fingerprints(&reference);
        for (what, text) in [
            ("pretty shuffled JSON", &pretty),
            ("compact shuffled JSON", &shuffled_compact),
            ("flow YAML", &flow_yaml),
            ("block YAML", &block_yaml),
        ] {
            let spec = normalize(text, what)?;
            prop_assert_eq!(&tool_fingerprint(&spec), &reference_fp, "{}:\n{}", what, text);
            prop_assert_eq!(&endpoint_fingerprints(&spec), &reference_endpoints, "{}", what);
            prop_assert_eq!(&spec, &reference, "{}", what);
            let report = classify(&reference, &spec, &Default::default());
            prop_assert_eq!(report.compatibility, Compatibility::Identical);
            prop_assert!(report.changes.is_empty());
        }

        let same = classify(&reference, &reference, &Default::default());
        prop_assert_eq!(same.compatibility, Compatibility::Identical);
        prop_assert!(same.changes.is_empty());
        prop_assert_eq!(&same.old_fingerprint, &reference_fp);
        prop_assert_eq!(&same.new_fingerprint, &reference_fp);
    }
}
