//! Sunset and deprecation facts of the accepted contracts (issue 31, migration `sunsets`):
//! written with each stored contract (`write_facts`, from the compare-and-swap apply),
//! backfilled on open for contracts stored before (`backfill_sunsets`), listed without
//! decoding a document (`Registry::sunsets`), and the `sunset_approaching` alerts raised once
//! per (watch, endpoint, date) across restarts (`Registry::raise_sunset_alert`).

use super::sql::{values, Db};
use super::{events, now_rfc3339, read_tool, Registry, RegistryError, Result};
use crate::core::event::{EventData, EventKind};
use crate::core::model::ToolSpec;
use crate::core::sunset::{DateFact, EndpointFacts};

/// One endpoint of an accepted contract that is deprecated or states a sunset.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SunsetFact {
    pub watch: String,
    /// The accepted contract's tool version.
    pub version: i64,
    pub endpoint: String,
    pub operation_id: Option<String>,
    /// `METHOD path` (what a `uses` entry may name besides the name and operationId).
    pub identity: String,
    pub deprecated: bool,
    /// The sunset's UTC day (`YYYY-MM-DD`) when known.
    pub sunset: Option<String>,
    /// `known`, `unknown` (declared without a date), `invalid`, or `None` (no sunset).
    pub sunset_state: Option<String>,
}

/// Replaces the facts of `watch` with those of its accepted contract `spec` at `version`.
pub(super) fn write_facts(
    db: &mut Db<'_>,
    watch: &str,
    version: i64,
    spec: &ToolSpec,
) -> Result<()> {
    db.execute("DELETE FROM sunsets WHERE watch = ?1", values![watch])?;
    db.execute(
        "DELETE FROM sunset_versions WHERE watch = ?1",
        values![watch],
    )?;
    for endpoint in &spec.endpoints {
        let facts = EndpointFacts::of(endpoint, &spec.definitions);
        if !facts.deprecated && facts.sunset.is_none() {
            continue;
        }
        let (sunset, state) = match &facts.sunset {
            None => (None, None),
            Some(DateFact::Known(d)) => (Some(d.to_string()), Some("known")),
            Some(DateFact::Unknown) => (None, Some("unknown")),
            Some(DateFact::Invalid(_)) => (None, Some("invalid")),
        };
        let identity = endpoint.identity();
        db.execute(
            "INSERT INTO sunsets (watch, version, endpoint, operation_id, identity,
                deprecated, sunset, sunset_state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (watch, version, endpoint) DO UPDATE SET operation_id = excluded.operation_id,
                identity = excluded.identity, deprecated = excluded.deprecated,
                sunset = excluded.sunset, sunset_state = excluded.sunset_state",
            values![
                watch,
                version,
                endpoint.name.as_str(),
                endpoint.operation_id.as_deref(),
                identity.as_str(),
                i64::from(facts.deprecated),
                sunset.as_deref(),
                state
            ],
        )?;
    }
    db.execute(
        "INSERT INTO sunset_versions (watch, version) VALUES (?1, ?2)
         ON CONFLICT (watch, version) DO NOTHING",
        values![watch, version],
    )?;
    Ok(())
}

/// Drops a forgotten watch's facts and alerts.
pub(super) fn forget_facts(db: &mut Db<'_>, watch: &str) -> Result<()> {
    for sql in [
        "DELETE FROM sunsets WHERE watch = ?1",
        "DELETE FROM sunset_versions WHERE watch = ?1",
        "DELETE FROM sunset_alerts WHERE watch = ?1",
    ] {
        db.execute(sql, values![watch])?;
    }
    Ok(())
}

impl Registry {
    /// Computes the facts of every accepted contract stored without them (before the
    /// migration, or re-read by a projection upgrade). Reads first: a registry with nothing
    /// to do takes no write lock.
    pub(super) fn backfill_sunsets(&mut self) -> Result<()> {
        let missing: Vec<String> = self.read(|db| {
            db.query(
                "SELECT name FROM tools t WHERE NOT EXISTS (SELECT 1 FROM sunset_versions s
                    WHERE s.watch = t.name AND s.version = t.version) ORDER BY name",
                &[],
                |r| r.get(0),
            )
        })?;
        if missing.is_empty() {
            return Ok(());
        }
        self.write(|db| {
            for name in missing {
                // A contract whose source no longer reads is left out (its reads fail closed);
                // a database error is not (on PostgreSQL it has aborted the transaction).
                let tool = match read_tool(db, &name) {
                    Ok(Some(tool)) => tool,
                    Err(e @ (RegistryError::Sqlite(_) | RegistryError::Postgres(_))) => {
                        return Err(e)
                    }
                    Ok(None) | Err(_) => continue,
                };
                write_facts(db, &name, tool.version, &tool.spec)?;
            }
            Ok(())
        })
    }

    /// Every stored fact, sorted by watch and endpoint (byte order, whatever the database's
    /// collation: `refresh::sunsets::of_watch` finds a watch's facts by binary search): one
    /// query, no document decoded.
    pub fn sunsets(&self) -> Result<Vec<SunsetFact>> {
        let mut rows = self.read(|db| db.query(ALL_FACTS, &[], fact_row))?;
        rows.sort_by(|a, b| (&a.watch, &a.endpoint).cmp(&(&b.watch, &b.endpoint)));
        Ok(rows)
    }

    /// Whether any fact is stored at all: while none is, a refresh that moved no contract has
    /// no sunset to check (the daemon asks at each recount).
    pub fn has_sunsets(&self) -> Result<bool> {
        let any = self.read(|db| db.query_opt("SELECT 1 FROM sunsets LIMIT 1", &[], |_| Ok(())))?;
        Ok(any.is_some())
    }

    /// The stored facts of one watch's accepted contract, by endpoint: what a refresh of it
    /// checks (an indexed read of its rows only).
    pub fn sunsets_of(&self, watch: &str) -> Result<Vec<SunsetFact>> {
        let mut rows = self.read(|db| db.query(WATCH_FACTS, values![watch], fact_row))?;
        rows.sort_by(|a, b| a.endpoint.cmp(&b.endpoint));
        Ok(rows)
    }

    /// Records a `sunset_approaching` alert for `fact` and writes its event, in one
    /// transaction; `false` when it was raised before (once per watch, endpoint and date).
    pub fn raise_sunset_alert(&mut self, fact: &SunsetFact, kind: &str) -> Result<bool> {
        let Some(sunset) = &fact.sunset else {
            return Ok(false);
        };
        const RAISED: &str =
            "SELECT raised_at FROM sunset_alerts WHERE watch = ?1 AND endpoint = ?2 AND sunset = ?3";
        let key = values![fact.watch.as_str(), fact.endpoint.as_str(), sunset.as_str()];
        // Raised before (every refresh of the warning window after the first): a read, no
        // write lock. The same check inside the transaction settles a race.
        let raised_before: Option<String> =
            self.read(|db| db.query_opt(RAISED, key, |r| r.get(0)))?;
        if raised_before.is_some() {
            return Ok(false);
        }
        let routes = self.current_routes();
        self.write(|db| {
            let raised: Option<String> = db.query_opt(RAISED, key, |r| r.get(0))?;
            if raised.is_some() {
                return Ok(false);
            }
            db.execute(
                "INSERT INTO sunset_alerts (watch, endpoint, sunset, raised_at) VALUES (?1, ?2, ?3, ?4)",
                values![
                    fact.watch.as_str(),
                    fact.endpoint.as_str(),
                    sunset.as_str(),
                    &now_rfc3339()
                ],
            )?;
            let data = EventData {
                endpoint: Some(fact.endpoint.clone()),
                sunset: Some(sunset.clone()),
                ..EventData::for_watch(&fact.watch, kind)
            };
            events::emit(db, &routes, EventKind::SunsetApproaching, &data)?;
            Ok(true)
        })
    }
}

/// The facts of accepted contracts (a superseded version's rows are not read), as [`fact_row`]
/// reads them: every watch's, and one watch's (the refresh's: a constant, no text built).
macro_rules! facts_query {
    ($tail:literal) => {
        concat!(
            "SELECT s.watch, s.version, s.endpoint, s.operation_id, s.identity,
    s.deprecated, s.sunset, s.sunset_state
    FROM sunsets s JOIN tools t ON t.name = s.watch AND t.version = s.version ",
            $tail
        )
    };
}
const ALL_FACTS: &str = facts_query!("ORDER BY s.watch, s.endpoint");
const WATCH_FACTS: &str = facts_query!("WHERE s.watch = ?1 ORDER BY s.endpoint");

fn fact_row(r: &super::sql::Row<'_, '_>) -> Result<SunsetFact> {
    Ok(SunsetFact {
        watch: r.get(0)?,
        version: r.get(1)?,
        endpoint: r.get(2)?,
        operation_id: r.get(3)?,
        identity: r.get(4)?,
        deprecated: r.get::<i64>(5)? != 0,
        sunset: r.get(6)?,
        sunset_state: r.get(7)?,
    })
}
