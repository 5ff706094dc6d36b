//! The contract kinds, each declared once: its name (config `kind`, `--kind`, serialization),
//! its normalizer, its descriptive allow-list, whether it has source pointers, what it adds to
//! the general rules ([`KindHooks`]) and its other properties. `Kind`, `Kind::ALL`,
//! `Kind::parse`, `Kind::as_str`, the `--kind` values and the config's list of kinds all derive
//! from the rows of `kinds!` below; the one `match` on `Kind` is `sources::load` (how a kind is
//! fetched: I/O, outside the core).
//!
//! A new kind is one row here, plus its normalizer file (declared by its row: `in NAME`), its
//! `load` arm and its rules if any: ARCHITECTURE.md, "Add a kind".

use crate::core::diff::{database, odata, openrpc, tool, KindHooks};
use crate::core::model::ToolSpec;
use crate::core::normalize::source::Pointers;
use crate::core::normalize::{self, NormalizeError, SharedEndpoints};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How a kind's document becomes a contract.
#[derive(Clone, Copy)]
pub enum Reader {
    /// A normalizer that reads the whole document, then shares equal endpoints afterwards.
    Whole(fn(&str, &[u8]) -> Result<ToolSpec, NormalizeError>),
    /// A normalizer that shares equal endpoints as it reads (large documents).
    Sharing(fn(&str, &[u8], SharedEndpoints<'_>) -> Result<ToolSpec, NormalizeError>),
}

/// What a kind's normalizer keeps out of the fingerprint (`docs/allow-list.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descriptive {
    /// Deny by default: every field stays in the contract except these `(where, why)`.
    DenyByDefault(&'static [(&'static str, &'static str)]),
    /// Not yet deny-by-default: the normalizer keeps what it models and drops the rest.
    KeepsWhatItModels,
    /// The document is schemawatch's own catalog introspection (docs/databases.md).
    OwnIntrospection,
}

/// One kind's declaration.
#[derive(Clone, Copy)]
pub struct KindDecl {
    pub kind: Kind,
    /// The config `kind`, `--kind` value and serialized name; frozen.
    pub name: &'static str,
    /// Its normalizer (pure).
    pub reader: Reader,
    /// Its descriptive allow-list.
    pub descriptive: Descriptive,
    /// How a change path maps back onto the document (`None`: file-level locations in the CI
    /// formats).
    pub pointers: Option<Pointers>,
    /// What it adds to the general rules (`KindHooks::NONE` for nothing).
    pub hooks: KindHooks,
    /// The document may name other documents by external `$ref` (OpenAPI's bundling,
    /// `core::normalize::openapi_refs`), read from the same place before normalizing.
    pub external_refs: bool,
    /// Every string of its contracts is text a model reads (MCP), not only descriptions,
    /// titles and summaries: `hidden-text-added` scans them all.
    pub every_string_model_facing: bool,
    /// A database kind: its endpoints are tables, views and functions (docs/databases.md).
    pub is_database: bool,
}

/// Declares `Kind` (one variant per row, in this order: it is `Kind`'s `Ord`) and its
/// declarations: `Variant "name" in module { field: value, ... }`, where `module` is its
/// normalizer's file under `src/core/normalize/`.
macro_rules! kinds {
    ($( $(#[$doc:meta])* $variant:ident $name:literal in $module:ident { $($field:ident : $value:expr),* $(,)? } )*) => {
        /// The kinds of contract schemawatch watches.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Kind {
            $( $(#[$doc])* #[serde(rename = $name)] $variant, )*
        }

        /// Every declaration, in `Kind`'s order (`KINDS[k as usize]` is `k`'s).
        pub const KINDS: &[KindDecl] = &[
            $( KindDecl { kind: Kind::$variant, name: $name, $($field: $value),* }, )*
        ];

        impl Kind {
            /// Every kind, in declaration order.
            pub const ALL: [Kind; [$(Kind::$variant),*].len()] = [$(Kind::$variant),*];
        }

        /// Declares each kind's normalizer module (`pub mod NAME;`), expanded once, in
        /// `core::normalize`: the row names the file, so a new kind adds no line there.
        macro_rules! normalizer_modules {
            () => { $( pub mod $module; )* };
        }
        pub(crate) use normalizer_modules;
    };
}

kinds! {
    Openapi "openapi" in openapi {
        reader: Reader::Sharing(normalize::openapi::normalize_sharing),
        descriptive: Descriptive::DenyByDefault(normalize::openapi::DESCRIPTIVE),
        pointers: Some(Pointers::Openapi),
        hooks: KindHooks::NONE,
        external_refs: true,
        every_string_model_facing: false,
        is_database: false,
    }
    Openrpc "openrpc" in openrpc {
        reader: Reader::Whole(normalize::openrpc::normalize),
        descriptive: Descriptive::DenyByDefault(normalize::openrpc::DESCRIPTIVE),
        pointers: Some(Pointers::Openrpc),
        hooks: KindHooks {
            meta: Some(openrpc::compare_facts),
            pair: Some(openrpc::compare_param_structure),
            ..KindHooks::NONE
        },
        external_refs: false,
        every_string_model_facing: false,
        is_database: false,
    }
    Odata "odata" in odata {
        reader: Reader::Whole(normalize::odata::normalize),
        descriptive: Descriptive::DenyByDefault(normalize::odata::DESCRIPTIVE),
        pointers: None,
        hooks: KindHooks {
            meta: Some(odata::compare_facts),
            ..KindHooks::NONE
        },
        external_refs: false,
        every_string_model_facing: false,
        is_database: false,
    }
    Graphql "graphql" in graphql {
        reader: Reader::Whole(normalize::graphql::normalize),
        descriptive: Descriptive::DenyByDefault(normalize::graphql::DESCRIPTIVE),
        pointers: None,
        hooks: KindHooks::NONE,
        external_refs: false,
        every_string_model_facing: false,
        is_database: false,
    }
    Mcp "mcp" in mcp {
        reader: Reader::Sharing(normalize::mcp::normalize_sharing),
        descriptive: Descriptive::DenyByDefault(normalize::mcp::DESCRIPTIVE),
        pointers: None,
        hooks: KindHooks {
            swap: Some(tool::kind_rule),
            ..KindHooks::NONE
        },
        external_refs: false,
        every_string_model_facing: true,
        is_database: false,
    }
    // Not yet deny-by-default: it keeps what it models (docs/kinds-rpc.md, "OPTIMADE").
    Optimade "optimade" in optimade {
        reader: Reader::Whole(normalize::optimade::normalize),
        descriptive: Descriptive::KeepsWhatItModels,
        pointers: None,
        hooks: KindHooks::NONE,
        external_refs: false,
        every_string_model_facing: false,
        is_database: false,
    }
    /// A SQLite database file, by catalog introspection.
    Sqlite "sqlite" in sqlite {
        reader: Reader::Whole(normalize::sqlite::normalize),
        descriptive: Descriptive::OwnIntrospection,
        pointers: None,
        hooks: KindHooks {
            added: Some(database::added),
            meta: Some(database::compare_facts),
            ..KindHooks::NONE
        },
        external_refs: false,
        every_string_model_facing: false,
        is_database: true,
    }
    /// A PostgreSQL database, by `pg_catalog` introspection.
    Postgres "postgres" in postgres {
        reader: Reader::Whole(normalize::postgres::normalize),
        descriptive: Descriptive::OwnIntrospection,
        pointers: None,
        hooks: KindHooks {
            added: Some(database::added),
            meta: Some(database::compare_facts),
            ..KindHooks::NONE
        },
        external_refs: false,
        every_string_model_facing: false,
        is_database: true,
    }
}

impl Kind {
    /// This kind's declaration.
    pub fn decl(self) -> &'static KindDecl {
        // `kinds!` lists `KINDS` in `Kind`'s order, one per variant: the index is in range.
        &KINDS[self as usize]
    }

    pub fn as_str(self) -> &'static str {
        self.decl().name
    }

    /// A database kind: its endpoints are tables, views and functions (docs/databases.md).
    pub fn is_database(self) -> bool {
        self.decl().is_database
    }

    pub fn parse(text: &str) -> Option<Kind> {
        KINDS.iter().find(|d| d.name == text).map(|d| d.kind)
    }

    /// Every kind's name, in order, separated by `, ` (for messages).
    pub fn names() -> String {
        KINDS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_kind_has_exactly_one_declaration_in_its_order() {
        assert_eq!(KINDS.len(), Kind::ALL.len());
        for (i, (decl, kind)) in KINDS.iter().zip(Kind::ALL).enumerate() {
            assert_eq!(decl.kind, kind, "row {i}");
            assert_eq!(kind as usize, i, "{kind}");
            assert_eq!(kind.decl().kind, kind);
        }
        let names: BTreeSet<&str> = KINDS.iter().map(|d| d.name).collect();
        assert_eq!(names.len(), KINDS.len(), "kind names are unique");
    }

    #[test]
    fn every_name_round_trips_through_parse_display_and_serde() {
        for kind in Kind::ALL {
            let name = kind.as_str();
            assert!(
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase()),
                "{name:?}: a kind's name is lowercase ASCII letters"
            );
            assert_eq!(Kind::parse(name), Some(kind));
            assert_eq!(kind.to_string(), name);
            assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::json!(name));
            let back: Kind = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(back, kind);
        }
        assert_eq!(Kind::parse("OpenAPI"), None);
        assert_eq!(Kind::parse(""), None);
    }

    #[test]
    fn the_kind_names_are_frozen() {
        // Config files, registries and `--kind` carry these names: a change is user-visible.
        // A new kind is appended; these stay as they are.
        assert!(Kind::names()
            .starts_with("openapi, openrpc, odata, graphql, mcp, optimade, sqlite, postgres"));
    }
}
