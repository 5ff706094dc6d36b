//! The registry's text columns as types: watch status, review state, how a reviewer was
//! identified (`via`), and the core's `Kind` and `Compatibility`. The registry stores them as
//! the same lowercase strings it always has (no migration); reading an unknown string is a
//! typed error ([`UnknownText`], surfaced as `RegistryError::UnknownValue`), never a guess.

use crate::core::model::{Compatibility, Kind};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use std::fmt;

/// A stored text that names no value of its column's type (a row written by a newer release,
/// or edited by hand): reading the row fails with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {text:?}")]
pub struct UnknownText {
    /// What the column holds (`watch kind`, `compatibility`, ...).
    pub what: &'static str,
    pub text: String,
}

/// The column value `text` as a `T`, or [`UnknownText`] as rusqlite's conversion error.
fn column<T>(
    value: ValueRef<'_>,
    what: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> FromSqlResult<T> {
    let text = value.as_str()?;
    parse(text).ok_or_else(|| {
        FromSqlError::Other(Box::new(UnknownText {
            what,
            text: text.to_string(),
        }))
    })
}

/// `ToSql` / `FromSql` for a type of the core with `as_str` / `parse` (the core names no
/// database crate).
macro_rules! stored_text {
    ($name:ident, $what:literal) => {
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                column(value, $what, $name::parse)
            }
        }

        impl From<$name> for super::sql::Value<'static> {
            fn from(v: $name) -> Self {
                super::sql::Value::Text(v.as_str())
            }
        }

        impl From<Option<$name>> for super::sql::Value<'static> {
            fn from(v: Option<$name>) -> Self {
                v.map_or(super::sql::Value::NullText, |v| {
                    super::sql::Value::Text(v.as_str())
                })
            }
        }

        impl<'a> postgres::types::FromSql<'a> for $name {
            fn from_sql(
                ty: &postgres::types::Type,
                raw: &'a [u8],
            ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
                let text = <&str as postgres::types::FromSql>::from_sql(ty, raw)?;
                $name::parse(text).ok_or_else(|| {
                    Box::new(UnknownText {
                        what: $what,
                        text: text.to_string(),
                    }) as Box<dyn std::error::Error + Sync + Send>
                })
            }

            fn accepts(ty: &postgres::types::Type) -> bool {
                <&str as postgres::types::FromSql>::accepts(ty)
            }
        }
    };
}

stored_text!(Kind, "kind");
stored_text!(Compatibility, "compatibility");

macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident ($what:literal) { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored (and printed) spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        stored_text!($name, $what);
    };
}

stored_enum! {
    /// What the last cycle of a watch ended in (`status` in `status --json` and the metrics).
    WatchStatus ("watch status") {
        /// Known to the registry, never refreshed (or reset).
        Idle => "idle",
        Registered => "registered",
        Unchanged => "unchanged",
        Applied => "applied",
        ReportOnly => "report_only",
        PendingReview => "pending_review",
        Rejected => "rejected",
        Error => "error",
        /// The configured source differs from the one the accepted contract came from.
        Stale => "stale",
    }
}

// Written out: the macro's derive list is shared with ReviewState, which has no default.
#[allow(clippy::derivable_impls)]
impl Default for WatchStatus {
    fn default() -> Self {
        WatchStatus::Idle
    }
}

stored_enum! {
    /// Where a review stands.
    ReviewState ("review state") {
        Open => "open",
        Accepted => "accepted",
        Rejected => "rejected",
        /// Closed without a decision: a newer candidate, the accepted contract came back, or a
        /// compatible candidate was applied.
        Superseded => "superseded",
    }
}

stored_enum! {
    /// How the name recorded with a decision was established.
    Via ("via") {
        /// A local shell's free-text `--reviewer` (a local shell is trusted).
        Cli => "cli",
        /// The admin token, naming a reviewer in the request.
        Admin => "admin",
        /// A `[[reviewer]]`'s own token (a bearer token, a UI session, or a trusted proxy's header).
        Reviewer => "reviewer",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_unknown_is_none() {
        for s in WatchStatus::ALL {
            assert_eq!(WatchStatus::parse(s.as_str()), Some(*s));
        }
        for s in ReviewState::ALL {
            assert_eq!(ReviewState::parse(s.as_str()), Some(*s));
        }
        for s in Via::ALL {
            assert_eq!(Via::parse(s.as_str()), Some(*s));
        }
        assert_eq!(WatchStatus::parse("Unchanged"), None);
        assert_eq!(ReviewState::parse(""), None);
    }
}
