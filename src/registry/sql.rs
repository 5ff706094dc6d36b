//! The registry's SQL on either backend (issue 33): one statement text, written once with
//! SQLite's `?N` placeholders, run on a SQLite connection as it is and on a PostgreSQL one
//! with `$N` ([`postgres_text`]); the values the registry binds ([`Value`]: integers, text,
//! bytes, each possibly NULL) and the columns it reads ([`Row::get`]: whatever both drivers
//! convert, `i64`, `String`, `Vec<u8>` and their `Option`s).
//!
//! Integers are always `i64` (every SQLite INTEGER is a BIGINT twin; a `bool` would be refused
//! by PostgreSQL), blobs are BYTEA, timestamps are TEXT rendered by the binary, so what a
//! statement returns is the same on both backends.

use super::{RegistryError, Result, UnknownText};
use std::borrow::Cow;

/// One bound parameter. A NULL keeps its type: PostgreSQL checks a parameter's Rust type
/// against the column's even when the value is NULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    I64(i64),
    Text(&'a str),
    Bytes(&'a [u8]),
    NullI64,
    NullText,
    NullBytes,
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::I64(v)
    }
}
impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Text(v)
    }
}
impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Text(v)
    }
}
impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(v: &'a [u8]) -> Self {
        Value::Bytes(v)
    }
}
impl<'a> From<&'a Vec<u8>> for Value<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}
impl From<Option<i64>> for Value<'_> {
    fn from(v: Option<i64>) -> Self {
        v.map_or(Value::NullI64, Value::I64)
    }
}
impl<'a> From<Option<&'a str>> for Value<'a> {
    fn from(v: Option<&'a str>) -> Self {
        v.map_or(Value::NullText, Value::Text)
    }
}
impl<'a> From<Option<&'a [u8]>> for Value<'a> {
    fn from(v: Option<&'a [u8]>) -> Self {
        v.map_or(Value::NullBytes, Value::Bytes)
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::I64(v) => ValueRef::Integer(v),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Bytes(b) => ValueRef::Blob(b),
            Value::NullI64 | Value::NullText | Value::NullBytes => ValueRef::Null,
        }))
    }
}

static NULL_I64: Option<i64> = None;
static NULL_TEXT: Option<&str> = None;
static NULL_BYTES: Option<&[u8]> = None;

impl Value<'_> {
    fn postgres(&self) -> &(dyn postgres::types::ToSql + Sync) {
        match self {
            Value::I64(v) => v,
            Value::Text(s) => s,
            Value::Bytes(b) => b,
            Value::NullI64 => &NULL_I64,
            Value::NullText => &NULL_TEXT,
            Value::NullBytes => &NULL_BYTES,
        }
    }
}

/// `[a, b, …]` as a `&[Value]` (each converted with `Value::from`).
macro_rules! values {
    ($($v:expr),* $(,)?) => {
        &[$($crate::registry::sql::Value::from($v)),*][..]
    };
}
pub(crate) use values;

/// A column type both drivers read: `i64`, `String`, `Vec<u8>` and their `Option`s.
pub(crate) trait Column: Sized {
    fn sqlite(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Self>;
    fn postgres(row: &postgres::Row, i: usize) -> std::result::Result<Self, postgres::Error>;
}

impl<T> Column for T
where
    T: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a>,
{
    fn sqlite(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<T> {
        row.get(i)
    }
    fn postgres(row: &postgres::Row, i: usize) -> std::result::Result<T, postgres::Error> {
        row.try_get(i)
    }
}

/// One result row, read by column index.
pub(crate) enum Row<'r, 's> {
    Sqlite(&'r rusqlite::Row<'s>),
    Postgres(&'r postgres::Row),
}

impl Row<'_, '_> {
    pub(crate) fn get<T: Column>(&self, i: usize) -> Result<T> {
        match self {
            Row::Sqlite(r) => Ok(T::sqlite(r, i)?),
            Row::Postgres(r) => T::postgres(r, i).map_err(|e| {
                // A stored text naming no value of its type: the same typed error as SQLite's.
                match std::error::Error::source(&e).and_then(|s| s.downcast_ref::<UnknownText>()) {
                    Some(unknown) => RegistryError::UnknownValue(unknown.clone()),
                    None => e.into(),
                }
            }),
        }
    }
}

impl Row<'_, '_> {
    /// Column `i` read as `ty` into an owned value, NULL included (for code that learns a
    /// table's columns at run time: the registry copy).
    pub(crate) fn get_owned(&self, i: usize, ty: ColumnType) -> Result<Owned> {
        Ok(match ty {
            ColumnType::I64 => Owned::I64(self.get(i)?),
            ColumnType::Text => Owned::Text(self.get(i)?),
            ColumnType::Bytes => Owned::Bytes(self.get(i)?),
        })
    }
}

/// The type of a column learnt at run time from the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnType {
    I64,
    Text,
    Bytes,
}

impl ColumnType {
    /// The type of a column declared `declared` on either backend: SQLite's (STRICT) INTEGER,
    /// TEXT and BLOB, and their PostgreSQL twins bigint, text and bytea; `None` for any other.
    pub(crate) fn of_declared(declared: &str) -> Option<ColumnType> {
        match declared.to_ascii_lowercase().as_str() {
            "integer" | "bigint" => Some(ColumnType::I64),
            "text" => Some(ColumnType::Text),
            "blob" | "bytea" => Some(ColumnType::Bytes),
            _ => None,
        }
    }
}

/// One column's value, owned; a NULL keeps its column's type (PostgreSQL checks it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Owned {
    I64(Option<i64>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
}

impl Owned {
    /// The value to bind for it.
    pub(crate) fn value(&self) -> Value<'_> {
        match self {
            Owned::I64(v) => Value::from(*v),
            Owned::Text(v) => Value::from(v.as_deref()),
            Owned::Bytes(v) => Value::from(v.as_deref()),
        }
    }
}

/// A PostgreSQL session of the registry: its client and the statements it prepared, by text
/// and parameter types (SQLite's `prepare_cached` twin: a statement is parsed and planned once
/// per connection, not on every call, which would cost a round trip each).
pub struct PgSession {
    /// `None` only while the session is dropped ([`off_runtime`]: closing the connection blocks).
    client: Option<postgres::Client>,
    statements:
        std::collections::HashMap<(String, Vec<postgres::types::Type>), postgres::Statement>,
    /// A statement failed since the last `BEGIN`: the server has aborted the transaction, and
    /// its COMMIT would answer ROLLBACK without an error (`lifecycle::pg_write` refuses it).
    pub(crate) failed_in_transaction: bool,
}

/// Statements a session keeps prepared at most (the registry's texts are a few dozen
/// constants; the bound only matters if texts were ever built per call).
const CACHED_STATEMENTS: usize = 256;

impl PgSession {
    pub(crate) fn new(client: postgres::Client) -> PgSession {
        PgSession {
            client: Some(client),
            statements: std::collections::HashMap::new(),
            failed_in_transaction: false,
        }
    }

    /// Whether the connection is closed for good (the server ended it, or it was lost).
    pub(crate) fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(postgres::Client::is_closed)
    }

    pub(crate) fn client(&mut self) -> Result<&mut postgres::Client> {
        self.client
            .as_mut()
            .ok_or_else(|| RegistryError::Postgres("the registry connection is closed".into()))
    }

    /// `sql` prepared with every parameter's type given by its value (BIGINT, TEXT, BYTEA),
    /// so a parameter whose type the server cannot infer (`?1 IS NULL OR watch = ?1`) needs no
    /// cast in the shared text.
    fn prepare(&mut self, sql: &str, params: &[Value<'_>]) -> Result<postgres::Statement> {
        use postgres::types::Type;
        let types: Vec<Type> = params
            .iter()
            .map(|v| match v {
                Value::I64(_) | Value::NullI64 => Type::INT8,
                Value::Text(_) | Value::NullText => Type::TEXT,
                Value::Bytes(_) | Value::NullBytes => Type::BYTEA,
            })
            .collect();
        let key = (sql.to_string(), types);
        if let Some(stmt) = self.statements.get(&key) {
            return Ok(stmt.clone());
        }
        let stmt = self
            .client()?
            .prepare_typed(postgres_text(sql).as_ref(), &key.1)?;
        if self.statements.len() >= CACHED_STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(key, stmt.clone());
        Ok(stmt)
    }

    /// A statement failed: the prepared ones may be what failed (another process migrated the
    /// schema under them), so they are prepared again on next use.
    fn failed(&mut self, e: postgres::Error) -> RegistryError {
        self.statements.clear();
        self.failed_in_transaction = true;
        e.into()
    }
}

impl Drop for PgSession {
    fn drop(&mut self) {
        // Closing the connection and its runtime blocks: never on a runtime worker.
        if let Some(client) = self.client.take() {
            off_runtime(move || drop(client));
        }
    }
}

/// Runs `f`, which blocks on PostgreSQL's network I/O, where blocking is allowed: as it is on a
/// plain thread or the blocking pool; through `block_in_place` on a multi-threaded runtime's
/// worker (its other tasks move to another thread meanwhile, and the blocking client's own
/// runtime may run there). `f` always runs to its end: a caller's future cancelled meanwhile
/// cannot stop it inside a transaction.
pub(crate) fn off_runtime<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        // A plain thread, or a blocking-pool thread; a single-threaded runtime reaches the
        // registry only through its blocking pool.
        _ => f(),
    }
}

/// The PostgreSQL session a registry holds: its own, or one lent by the daemon's pool
/// (`Location::pool`), which takes it back when the registry is dropped.
pub(crate) enum Held {
    Own(PgSession),
    Pooled(r2d2::PooledConnection<super::location::Manager>),
}

impl std::ops::Deref for Held {
    type Target = PgSession;
    fn deref(&self) -> &PgSession {
        match self {
            Held::Own(s) => s,
            Held::Pooled(s) => s,
        }
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut PgSession {
        match self {
            Held::Own(s) => s,
            Held::Pooled(s) => s,
        }
    }
}

/// A connection (or the connection of an open transaction) of either backend.
pub(crate) enum Db<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(&'a mut PgSession),
}

impl Db<'_> {
    /// Runs one statement; the number of rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64> {
        match self {
            Db::Sqlite(c) => {
                let n = c
                    .prepare_cached(sql)?
                    .execute(rusqlite::params_from_iter(params))?;
                Ok(n as u64)
            }
            Db::Postgres(s) => {
                let stmt = s.prepare(sql, params)?;
                match s.client()?.execute(&stmt, &pg_params(params)) {
                    Ok(n) => Ok(n),
                    Err(e) => Err(s.failed(e)),
                }
            }
        }
    }

    /// The first row `sql` returns, read by `f`; `None` when it returns none.
    pub(crate) fn query_opt<T>(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
        f: impl FnOnce(&Row<'_, '_>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self {
            Db::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                match rows.next()? {
                    Some(r) => f(&Row::Sqlite(r)).map(Some),
                    None => Ok(None),
                }
            }
            Db::Postgres(s) => {
                let stmt = s.prepare(sql, params)?;
                match s.client()?.query_opt(&stmt, &pg_params(params)) {
                    Ok(Some(r)) => f(&Row::Postgres(&r)).map(Some),
                    Ok(None) => Ok(None),
                    Err(e) => Err(s.failed(e)),
                }
            }
        }
    }

    /// Every row `sql` returns, each read by `f`, in the order returned.
    pub(crate) fn query<T>(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
        mut f: impl FnMut(&Row<'_, '_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self {
            Db::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(f(&Row::Sqlite(r))?);
                }
                Ok(out)
            }
            Db::Postgres(s) => {
                let stmt = s.prepare(sql, params)?;
                match s.client()?.query(&stmt, &pg_params(params)) {
                    Ok(rows) => rows.iter().map(|r| f(&Row::Postgres(r))).collect(),
                    Err(e) => Err(s.failed(e)),
                }
            }
        }
    }
}

fn pg_params<'v>(params: &'v [Value<'_>]) -> Vec<&'v (dyn postgres::types::ToSql + Sync)> {
    params.iter().map(Value::postgres).collect()
}

/// `sql` with every `?N` placeholder written `$N` (PostgreSQL's), leaving string literals,
/// quoted identifiers and `--` comments as they are. A `?` not followed by a digit is left
/// alone (the registry numbers every placeholder).
pub(crate) fn postgres_text(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    // Inside a quoted literal or identifier: its closing quote.
    let mut quote: Option<char> = None;
    let mut comment = false;
    while let Some(c) = chars.next() {
        if comment {
            comment = c != '\n';
            out.push(c);
            continue;
        }
        if let Some(q) = quote {
            // A doubled quote inside is an escaped one: the literal goes on either way.
            if c == q {
                quote = None;
            }
            out.push(c);
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '-' if chars.peek() == Some(&'-') => {
                comment = true;
                out.push(c);
            }
            '?' if chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::postgres_text;

    #[test]
    fn placeholders_become_dollar_numbers_outside_quotes_and_comments() {
        assert_eq!(
            postgres_text("SELECT a FROM t WHERE b = ?1 AND c IN (?2, ?12)"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $12)"
        );
        assert_eq!(
            postgres_text("SELECT '?1', \"?2\", 'it''s ?3' FROM t WHERE x=?4 -- ?5\n AND y=?6"),
            "SELECT '?1', \"?2\", 'it''s ?3' FROM t WHERE x=$4 -- ?5\n AND y=$6"
        );
        // A bare `?` is not the registry's: left for the server to refuse.
        assert_eq!(postgres_text("SELECT ? "), "SELECT ? ");
        assert!(matches!(
            postgres_text("SELECT 1"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
