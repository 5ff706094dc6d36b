//! Golden vectors for a whole small ToolSpec (`tests/fixtures/golden-petstore.json`).
//!
//! Fingerprints are stored in every registry; these constants freeze them. If one of these
//! assertions fails, the fingerprint changed: that needs a new `FINGERPRINT_VERSION` and a
//! registry migration, not just an edit of the constants.
//!
//! The constants were recomputed independently with Python 3 (standard library only) from the
//! canonical texts below, to be sure the Rust digest is SHA-256 over exactly
//! `domain tag || 0x00 || canonical JSON` and nothing else:
//!
//! ```text
//! import hashlib, json
//! def fp(tag, text): return "sha256:" + hashlib.sha256(tag.encode() + b"\0" + text.encode()).hexdigest()
//! def canon(v): return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
//! assert canon(json.loads(TOOL_PROJECTION)) == TOOL_PROJECTION  # already canonical
//! fp("schemawatch.tool.v1", TOOL_PROJECTION)                == TOOL_FINGERPRINT
//! fp("schemawatch.endpoint.v1", HEALTH_ENDPOINT_PROJECTION) == HEALTH_ENDPOINT_FINGERPRINT
//! fp("schemawatch.definition.v1", PET_DEFINITION)           == PET_DEFINITION_DIGEST
//! fp("schemawatch.definition-closure.v1",
//!    canon({"external": [], "members": {"#/components/schemas/Pet": PET_DEFINITION_DIGEST},
//!           "reaches": []}))                                == PET_CLOSURE_DIGEST
//! ```
//!
//! The same script also rebuilt every other digest from the normalized definitions and the
//! endpoint projection texts (as printed by `SpecIndex::endpoint_projection_text`): each
//! definition's body digest, each closure digest (`Pets` reaches `Pet`'s closure), each
//! endpoint projection's `definitions` map (the closure digests of the definitions the endpoint
//! references directly), each endpoint fingerprint, and finally the tool fingerprint. All
//! matched the Rust values (schemawatch at commit 79c691c).

use schemawatch::core::diff::classify;
use schemawatch::core::fingerprint::{
    digest_text, tool_fingerprint, SpecIndex, DEFINITION_CLOSURE_DOMAIN, DEFINITION_DOMAIN,
    ENDPOINT_DOMAIN, TOOL_DOMAIN,
};
use schemawatch::core::json::{parse_json, to_canonical_string};
use schemawatch::core::model::{Compatibility, ToolSpec};
use schemawatch::core::normalize::openapi;
use serde_json::Value;
use std::collections::BTreeMap;

const FIXTURE: &[u8] = include_bytes!("../fixtures/golden-petstore.json");
const WATCH: &str = "golden.petstore";

const TOOL_FINGERPRINT: &str =
    "sha256:ef6a5f05ae10dfbea2dfe16e477d7a7ef4e83d1417356ae47947fc904fdad9bf";

/// `to_canonical_string(&SpecIndex::tool_projection())` of the fixture.
const TOOL_PROJECTION: &str = concat!(
    r#"{"endpoints":{"#,
    r#""GET /health":"sha256:83444230afc12aa6fc4740ed5c54076655ad302ee64335ee8f4fefa3bcd54b4f","#,
    r#""GET /pets":"sha256:e59c5fe5574ddc63741d2830ed50dcd5cef7ad3318d14d8bcb4d71bc15e8cdc0","#,
    r#""GET /pets/{}":"sha256:de431de25da7a2b49585d682b7f18fad38d7468d0e9150d18e0f4523a7397898"},"#,
    r#""instructions":null,"kind":"openapi","name":"petstore","namespace":"golden","#,
    r#""remote":{"base_urls":["https://petstore.example.com/v1"],"transport":"http"}}"#,
);

const HEALTH_ENDPOINT_FINGERPRINT: &str =
    "sha256:83444230afc12aa6fc4740ed5c54076655ad302ee64335ee8f4fefa3bcd54b4f";

/// `SpecIndex::endpoint_projection_text` of `GET /health` (it reaches no definition).
const HEALTH_ENDPOINT_PROJECTION: &str = concat!(
    r#"{"definitions":{},"endpoint":{"aliases":[],"deprecated":false,"description":"Liveness","#,
    r#""destructive":false,"idempotent":true,"input_schema":null,"meta":null,"method":"GET","#,
    r#""name":"getHealth","open_world":true,"operation_id":"getHealth","output_schema":null,"#,
    r#""parameters":[],"path":"/health","path_template":"/health","read_only":true,"#,
    r#""request_body":null,"responses":{"200":{"content":{"application/json":{"properties":"#,
    r#"{"status":{"enum":["degraded","ok"],"type":"string"}},"required":["status"],"#,
    r#""type":"object"}},"description":"Up","headers":{}}},"security":[],"title":null}}"#,
);

const PET_DEFINITION_DIGEST: &str =
    "sha256:64a50db2062607de283bfb6a03af54de39b428e40b9f0e35fcc46146cb615a8b";

/// Closure digest of Pet (it references nothing): how endpoints reaching Pet name it.
const PET_CLOSURE_DIGEST: &str =
    "sha256:b83f3f0b5a0698e0d62df85e1873ee765e90e55e5623f62a6edbbabb3846ecaf";

/// The normalized `#/components/schemas/Pet` (nullable folded into the type set).
const PET_DEFINITION: &str = concat!(
    r#"{"properties":{"id":{"format":"int64","type":"integer"},"#,
    r#""name":{"maxLength":64,"type":"string"},"tag":{"type":["null","string"]}},"#,
    r#""required":["id","name"],"type":"object"}"#,
);

/// The fixture by hand in YAML: another key order, comments, plain and quoted scalars, flow
/// collections, unquoted status codes and a `nullable` spelled the same way.
const FIXTURE_YAML: &str = r##"
# The golden petstore, written the way people write YAML.
components:
  schemas:
    Error:
      properties:
        message: {type: string}
        code:
          format: int32
          type: integer
      required: [code, message]
      type: object
    Pets:
      items:
        $ref: '#/components/schemas/Pet'
      maxItems: 100
      type: array
    Pet:
      type: object
      required:
        - id
        - name
      properties:
        tag: {type: string, nullable: true}
        name: {type: string, maxLength: 64}
        id: {type: integer, format: int64}
paths:
  /health:
    get:
      summary: Liveness
      operationId: getHealth
      responses:
        200:
          description: Up
          content:
            application/json:
              schema:
                type: object
                properties:
                  status:
                    type: string
                    enum: [ok, degraded]
                required: [status]
  "/pets/{petId}":
    get:
      responses:
        default:
          description: Unexpected error
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Error"}
        "200":
          description: The pet
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Pet"}
      parameters:
        - {name: petId, in: path, required: true, schema: {type: string}}
      summary: Info for a specific pet
      operationId: showPetById
  /pets:
    get:
      operationId: listPets
      summary: List all pets
      parameters:
        - name: limit
          in: query
          required: false
          schema:
            maximum: 100
            minimum: 1.0
            format: int32
            type: integer
      responses:
        '200':
          description: A page of pets
          content:
            application/json:
              schema:
                $ref: "#/components/schemas/Pets"
        default:
          description: Unexpected error
          content:
            application/json:
              schema:
                $ref: "#/components/schemas/Error"
servers:
  - url: https://petstore.example.com/v1
info:
  version: 1.0.0
  title: Golden Petstore
  license: {name: Apache-2.0}
openapi: 3.0.3
"##;

fn golden() -> ToolSpec {
    openapi::normalize(WATCH, FIXTURE).expect("the golden fixture normalizes")
}

/// The fixture with one edit applied to its parsed JSON, re-serialized and normalized.
fn edited(edit: impl FnOnce(&mut Value)) -> ToolSpec {
    let mut doc = parse_json(std::str::from_utf8(FIXTURE).unwrap()).unwrap();
    edit(&mut doc);
    openapi::normalize(
        WATCH,
        serde_json::to_string_pretty(&doc).unwrap().as_bytes(),
    )
    .expect("the edited fixture normalizes")
}

fn endpoint_fingerprints(spec: &ToolSpec) -> BTreeMap<String, String> {
    let index = SpecIndex::new(spec);
    spec.endpoints
        .iter()
        .map(|e| (e.name.to_string(), index.endpoint_fingerprint(e)))
        .collect()
}

#[test]
fn golden_tool_fingerprint() {
    let spec = golden();
    let index = SpecIndex::new(&spec);
    assert_eq!(
        to_canonical_string(&index.tool_projection()),
        TOOL_PROJECTION
    );
    assert_eq!(digest_text(TOOL_DOMAIN, TOOL_PROJECTION), TOOL_FINGERPRINT);
    assert_eq!(index.tool_fingerprint(), TOOL_FINGERPRINT);
    assert_eq!(tool_fingerprint(&spec), TOOL_FINGERPRINT);
}

#[test]
fn golden_endpoint_and_definition_digests() {
    let spec = golden();
    let index = SpecIndex::new(&spec);
    let health = spec
        .endpoints
        .iter()
        .find(|e| e.name == "getHealth")
        .unwrap();
    assert_eq!(
        index.endpoint_projection_text(health),
        HEALTH_ENDPOINT_PROJECTION
    );
    // The fast path writes the same bytes as the canonical projection value.
    for e in &spec.endpoints {
        assert_eq!(
            index.endpoint_projection_text(e),
            to_canonical_string(&index.endpoint_projection(e))
        );
    }
    assert_eq!(
        digest_text(ENDPOINT_DOMAIN, HEALTH_ENDPOINT_PROJECTION),
        HEALTH_ENDPOINT_FINGERPRINT
    );
    assert_eq!(
        index.endpoint_fingerprint(health),
        HEALTH_ENDPOINT_FINGERPRINT
    );
    let pet = &spec.definitions["#/components/schemas/Pet"];
    assert_eq!(to_canonical_string(pet), PET_DEFINITION);
    assert_eq!(
        digest_text(DEFINITION_DOMAIN, PET_DEFINITION),
        PET_DEFINITION_DIGEST
    );
    let closure_text = format!(
        r##"{{"external":[],"members":{{"#/components/schemas/Pet":"{PET_DEFINITION_DIGEST}"}},"reaches":[]}}"##
    );
    assert_eq!(
        digest_text(DEFINITION_CLOSURE_DOMAIN, &closure_text),
        PET_CLOSURE_DIGEST
    );
    // showPetById references Pet directly and names it by that closure digest.
    let show = spec
        .endpoints
        .iter()
        .find(|e| e.name == "showPetById")
        .unwrap();
    assert_eq!(
        index.endpoint_projection(show)["definitions"]["#/components/schemas/Pet"],
        PET_CLOSURE_DIGEST
    );
}

#[test]
fn yaml_document_has_the_same_fingerprint() {
    let yaml = openapi::normalize(WATCH, FIXTURE_YAML.as_bytes()).expect("YAML normalizes");
    let json = golden();
    assert_eq!(tool_fingerprint(&yaml), tool_fingerprint(&json));
    assert_eq!(endpoint_fingerprints(&yaml), endpoint_fingerprints(&json));
    assert_eq!(yaml, json);
    let report = classify(&json, &yaml, &Default::default());
    assert_eq!(report.compatibility, Compatibility::Identical);
    assert!(report.changes.is_empty());
}

#[test]
fn document_title_and_version_are_outside_the_fingerprint() {
    let spec = edited(|doc| {
        doc["info"]["title"] = "A completely different title".into();
        doc["info"]["version"] = "9.9.9".into();
    });
    assert_eq!(
        spec.metadata.title.as_deref(),
        Some("A completely different title")
    );
    assert_eq!(tool_fingerprint(&spec), tool_fingerprint(&golden()));
    assert_eq!(
        endpoint_fingerprints(&spec),
        endpoint_fingerprints(&golden())
    );
    let report = classify(&golden(), &spec, &Default::default());
    assert_eq!(report.compatibility, Compatibility::Identical);
}

#[test]
fn server_url_is_inside_the_fingerprint() {
    let spec = edited(|doc| {
        doc["servers"][0]["url"] = "https://attacker.example.net/v1".into();
    });
    assert_ne!(tool_fingerprint(&spec), tool_fingerprint(&golden()));
    // The target is tool-level: no endpoint's own fingerprint moves.
    assert_eq!(
        endpoint_fingerprints(&spec),
        endpoint_fingerprints(&golden())
    );
    let report = classify(&golden(), &spec, &Default::default());
    assert_eq!(report.compatibility, Compatibility::SecurityReview);
    assert!(report
        .changes
        .iter()
        .any(|c| c.rule == "execution-target-changed" && c.path == "remote"));
}

#[test]
fn shared_component_edit_changes_exactly_the_endpoints_that_reach_it() {
    let before = endpoint_fingerprints(&golden());
    // Pet is reached by listPets (through Pets) and showPetById, not by getHealth.
    let after = endpoint_fingerprints(&edited(|doc| {
        doc["components"]["schemas"]["Pet"]["properties"]["name"]["maxLength"] = 128.into();
    }));
    assert_ne!(after["listPets"], before["listPets"]);
    assert_ne!(after["showPetById"], before["showPetById"]);
    assert_eq!(after["getHealth"], before["getHealth"]);

    // Pets is reached by listPets only.
    let after = endpoint_fingerprints(&edited(|doc| {
        doc["components"]["schemas"]["Pets"]["maxItems"] = 50.into();
    }));
    assert_ne!(after["listPets"], before["listPets"]);
    assert_eq!(after["showPetById"], before["showPetById"]);
    assert_eq!(after["getHealth"], before["getHealth"]);

    // An unused component is not part of any endpoint's contract, nor of the tool's.
    let unused = edited(|doc| {
        doc["components"]["schemas"]["Unused"] = serde_json::json!({"type": "string"});
    });
    assert_eq!(endpoint_fingerprints(&unused), before);
    assert_eq!(tool_fingerprint(&unused), tool_fingerprint(&golden()));
}
