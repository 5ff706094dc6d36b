use super::*;
use serde_json::json;

fn spec(sdl: &str) -> ToolSpec {
    normalize("t.g", sdl.as_bytes()).unwrap()
}

#[test]
fn roots_become_endpoints() {
    let s = spec(
        "schema { query: Q mutation: M }\n\"\"\"\n  The root\n\"\"\"\ntype Q { a(x: Int!, y: String = \"z\"): [Int!] @deprecated }\ntype M { b(i: In!): Int! }\ninput In { e: E! f: Int }\nenum E { X Y }",
    );
    let names: Vec<_> = s.endpoints.iter().map(|e| e.identity()).collect();
    assert_eq!(names, ["MUTATION Mutation.b", "QUERY Query.a"]);
    let a = &s.endpoints[1];
    assert!(a.read_only && a.idempotent && a.deprecated);
    assert_eq!(a.parameters[0].name, "x");
    assert!(a.parameters[0].required);
    assert!(!a.parameters[1].required);
    assert_eq!(a.parameters[1].schema, json!({"type": "string", "default": "z"}));
    assert_eq!(
        a.output_schema,
        Some(json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}))
    );
    let b = &s.endpoints[0];
    assert!(!b.read_only && b.destructive);
    assert_eq!(b.parameters[0].schema, json!({"allOf": [{"$ref": "#/types/In"}]}));
    assert_eq!(
        s.definitions["#/types/In"],
        json!({"type": "object", "x-graphql-kind": "input", "required": ["e"],
               "properties": {"e": {"allOf": [{"$ref": "#/types/E"}]}, "f": {"type": "integer"}}})
    );
}
