//! Watch status and review state as types. The registry stores them as the same lowercase
//! strings it always has (no migration); reading an unknown string is an error, not a guess.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use std::fmt;

macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
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

        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let text = value.as_str()?;
                $name::parse(text).ok_or_else(|| {
                    FromSqlError::Other(format!("unknown {} {text:?}", stringify!($name)).into())
                })
            }
        }
    };
}

stored_enum! {
    /// What the last cycle of a watch ended in (`status` in `status --json` and the metrics).
    WatchStatus {
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
    ReviewState {
        Open => "open",
        Accepted => "accepted",
        Rejected => "rejected",
        /// Closed without a decision: a newer candidate, the accepted contract came back, or a
        /// compatible candidate was applied.
        Superseded => "superseded",
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
        assert_eq!(WatchStatus::parse("Unchanged"), None);
        assert_eq!(ReviewState::parse(""), None);
    }
}
