//! The two database backends behind one small, synchronous interface.
//!
//! SQL is written once with `?` placeholders and portable types (`BIGINT`, `DOUBLE PRECISION`,
//! `TEXT`, a blob type); for PostgreSQL each `?` is rewritten to `$n`. Values cross the boundary as
//! [`Val`], so query results from SQLite and PostgreSQL compare equal and render identically.
//!
//! Backends: SQLite through `rusqlite` (bundled, so no system library; WAL journal) and
//! PostgreSQL through the synchronous `postgres` crate (no async runtime needed in a CLI
//! that does one transaction at a time, and a much lighter build than sqlx's macros).

use std::collections::HashMap;
use std::io::Seek;

use crate::StoreError;

/// One SQL value. Integers are `i64`, reals `f64`; PostgreSQL `INT2/INT4/BOOL` and `FLOAT4` are
/// widened on read so both backends yield the same variants.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// SQL NULL.
    Null,
    /// 64-bit integer.
    Int(i64),
    /// 64-bit float.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl Val {
    /// The integer, or `None` for any other variant.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The number as `f64` (integers widened), or `None`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Real(f) => Some(*f),
            _ => None,
        }
    }
    /// The text, or `None`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<i64> for Val {
    fn from(v: i64) -> Self {
        Val::Int(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Self {
        Val::Int(i64::from(v))
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Self {
        Val::Int(i64::from(v))
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Self {
        if v.is_finite() {
            Val::Real(v)
        } else {
            Val::Null
        }
    }
}
impl From<Option<f64>> for Val {
    fn from(v: Option<f64>) -> Self {
        v.map_or(Val::Null, Val::from)
    }
}
impl From<Option<i64>> for Val {
    fn from(v: Option<i64>) -> Self {
        v.map_or(Val::Null, Val::Int)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Val::Text(v.to_string())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Self {
        Val::Text(v)
    }
}
impl From<Option<String>> for Val {
    fn from(v: Option<String>) -> Self {
        v.map_or(Val::Null, Val::Text)
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Self {
        Val::Blob(v)
    }
}

/// Which backend a [`Conn`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// An open connection.
pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    /// The client and its prepared statements by SQL text (PostgreSQL otherwise prepares every
    /// statement anew: an extra round trip per query).
    Postgres(Box<postgres::Client>, HashMap<String, postgres::Statement>),
}

fn pg_stmt<'a>(
    c: &mut postgres::Client,
    cache: &'a mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<&'a postgres::Statement, StoreError> {
    if !cache.contains_key(sql) {
        if cache.len() >= 256 {
            cache.clear(); // dynamic IN-lists would otherwise grow it without bound
        }
        let st = c.prepare(&pg_sql(sql)).map_err(pg_err)?;
        cache.insert(sql.to_string(), st);
    }
    Ok(&cache[sql])
}

/// The PostgreSQL error with the server's message (the crate's Display says only "db error").
pub(crate) fn pg_err(e: postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Db(format!(
            "postgres: {}: {}{}",
            db.severity(),
            db.message(),
            db.detail().map(|d| format!(" ({d})")).unwrap_or_default()
        )),
        None => StoreError::Db(format!("postgres: {}", inferbench_core::error_chain(&e))),
    }
}

fn sq_err(e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
        // The caller names the file (`Store::schema_version`).
        return StoreError::NotADatabase(String::new());
    }
    // The file could not be written (a full disk, `ulimit -f`'s EFBIG): its own variant, so
    // that an ingest stops there and the CLI can name the limit.
    if matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::SystemIoFailure)
    ) {
        return StoreError::Write(format!("sqlite: {e}"));
    }
    StoreError::Db(format!("sqlite: {e}"))
}

/// Rewrites `?` placeholders to `$1, $2, …` (our SQL never has `?` inside string literals).
fn pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Val::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Val::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Val::Real(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Val::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Val::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

impl postgres::types::ToSql for Val {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::Type;
        match self {
            Val::Null => Ok(postgres::types::IsNull::Yes),
            Val::Int(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                _ => i.to_sql(ty, out),
            },
            Val::Real(f) => f.to_sql(ty, out),
            Val::Text(s) => s.as_str().to_sql(ty, out),
            Val::Blob(b) => b.as_slice().to_sql(ty, out),
        }
    }
    fn accepts(_ty: &postgres::types::Type) -> bool {
        true
    }
    postgres::types::to_sql_checked!();
}

fn pg_row(row: &postgres::Row) -> Result<Vec<Val>, StoreError> {
    use postgres::types::Type;
    let mut out = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let v = match *col.type_() {
            Type::INT8 => row.try_get::<_, Option<i64>>(i).map(|v| v.map(Val::Int)),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|x| Val::Int(x.into()))),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map(|v| v.map(|x| Val::Int(x.into()))),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map(|v| v.map(|x| Val::Int(x.into()))),
            Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map(|v| v.map(Val::Real)),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)
                .map(|v| v.map(|x| Val::Real(x.into()))),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(i)
                .map(|v| v.map(Val::Blob)),
            _ => row
                .try_get::<_, Option<String>>(i)
                .map(|v| v.map(Val::Text)),
        }
        .map_err(pg_err)?;
        out.push(v.unwrap_or(Val::Null));
    }
    Ok(out)
}

fn sq_row(row: &rusqlite::Row<'_>, n: usize) -> rusqlite::Result<Vec<Val>> {
    use rusqlite::types::ValueRef;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(match row.get_ref(i)? {
            ValueRef::Null => Val::Null,
            ValueRef::Integer(v) => Val::Int(v),
            ValueRef::Real(v) => Val::Real(v),
            ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Val::Blob(b.to_vec()),
        });
    }
    Ok(out)
}

impl Conn {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Conn::Sqlite(_) => Kind::Sqlite,
            Conn::Postgres(..) => Kind::Postgres,
        }
    }

    /// Runs one or more statements without parameters.
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(sq_err),
            Conn::Postgres(c, _) => c.batch_execute(sql).map_err(pg_err),
        }
    }

    /// Runs one statement; returns the number of rows changed.
    pub(crate) fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(sq_err)?;
                st.execute(rusqlite::params_from_iter(params.iter()))
                    .map(|n| n as u64)
                    .map_err(sq_err)
            }
            Conn::Postgres(c, cache) => {
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|v| v as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                let st = pg_stmt(c, cache, sql)?.clone();
                c.execute(&st, &refs).map_err(pg_err)
            }
        }
    }

    /// Stores a point's request records (`requests` row of point `pid`). SQLite: the blob's
    /// length is reserved (`zeroblob`) and its compressed bytes written into it in place
    /// (incremental blob I/O), so no copy of the blob, nor of the file it is compressed from, is
    /// held in memory (issue 39: storing a 170 MB records file ran out of memory at the
    /// advised `ulimit -v`); PostgreSQL: bound as one value.
    pub(crate) fn insert_requests(
        &mut self,
        pid: i64,
        r: &crate::parse::RequestsBlob,
    ) -> Result<(), StoreError> {
        const SQL: &str = "INSERT INTO requests (point_id, n_records, n_profile, n_failed, \
                           sha256, jsonl_zst) VALUES (?, ?, ?, ?, ?, ?)";
        match self {
            Conn::Sqlite(c) => {
                let len = i64::try_from(r.zst_len())
                    .map_err(|_| StoreError::Db("request records too large".into()))?;
                c.prepare_cached(&SQL.replace("?)", "zeroblob(?))"))
                    .and_then(|mut st| {
                        st.execute(rusqlite::params![
                            pid,
                            r.n_records,
                            r.n_profile,
                            r.n_failed,
                            r.sha256,
                            len
                        ])
                    })
                    .map_err(sq_err)?;
                let row = c.last_insert_rowid();
                let mut blob = c
                    .blob_open(rusqlite::MAIN_DB, "requests", "jsonl_zst", row, false)
                    .map_err(sq_err)?;
                r.write_zst(&mut blob).map_err(StoreError::Db)?;
                if blob.stream_position().ok() != Some(r.zst_len()) {
                    return Err(StoreError::Db(
                        "request records: fewer compressed bytes than counted".into(),
                    ));
                }
                Ok(())
            }
            Conn::Postgres(..) => {
                let mut bytes = Vec::with_capacity(r.jsonl_zst.len());
                r.write_zst(&mut bytes).map_err(StoreError::Db)?;
                let p = [
                    pid.into(),
                    r.n_records.into(),
                    r.n_profile.into(),
                    r.n_failed.into(),
                    r.sha256.clone().into(),
                    Val::Blob(bytes),
                ];
                self.exec(SQL, &p).map(|_| ())
            }
        }
    }

    /// Runs one query; returns all rows.
    pub(crate) fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(sq_err)?;
                let n = st.column_count();
                let rows = st
                    .query_map(rusqlite::params_from_iter(params.iter()), |r| sq_row(r, n))
                    .map_err(sq_err)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(sq_err)
            }
            Conn::Postgres(c, cache) => {
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|v| v as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                let st = pg_stmt(c, cache, sql)?.clone();
                let rows = c.query(&st, &refs).map_err(pg_err)?;
                rows.iter().map(pg_row).collect()
            }
        }
    }

    /// Runs a query whose rows are `(integer, integer, real, real)` (NULL reals become NaN),
    /// without a per-row allocation: the frontier's hot path.
    pub(crate) fn query_xy(
        &mut self,
        sql: &str,
        params: &[Val],
    ) -> Result<Vec<(i64, i64, f64, f64)>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(sq_err)?;
                let rows = st
                    .query_map(rusqlite::params_from_iter(params.iter()), |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN),
                            r.get::<_, Option<f64>>(3)?.unwrap_or(f64::NAN),
                        ))
                    })
                    .map_err(sq_err)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(sq_err)
            }
            Conn::Postgres(c, cache) => {
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|v| v as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                let st = pg_stmt(c, cache, sql)?.clone();
                let rows = c.query(&st, &refs).map_err(pg_err)?;
                let real = |r: &postgres::Row, i: usize| -> Result<f64, StoreError> {
                    if *r.columns()[i].type_() == postgres::types::Type::INT8 {
                        Ok(r.try_get::<_, Option<i64>>(i)
                            .map_err(pg_err)?
                            .map_or(f64::NAN, |v| v as f64))
                    } else {
                        Ok(r.try_get::<_, Option<f64>>(i)
                            .map_err(pg_err)?
                            .unwrap_or(f64::NAN))
                    }
                };
                rows.iter()
                    .map(|r| {
                        Ok((
                            r.try_get::<_, i64>(0).map_err(pg_err)?,
                            r.try_get::<_, i64>(1).map_err(pg_err)?,
                            real(r, 2)?,
                            real(r, 3)?,
                        ))
                    })
                    .collect()
            }
        }
    }

    /// Column names of a query's result (runs it with the given parameters).
    pub(crate) fn columns(&mut self, table: &str) -> Result<Vec<String>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let st = c
                    .prepare(&format!("SELECT * FROM {table} LIMIT 0"))
                    .map_err(sq_err)?;
                Ok(st.column_names().into_iter().map(String::from).collect())
            }
            Conn::Postgres(c, _) => {
                let st = c
                    .prepare(&format!("SELECT * FROM {table} LIMIT 0"))
                    .map_err(pg_err)?;
                Ok(st.columns().iter().map(|c| c.name().to_string()).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_for_postgres() {
        assert_eq!(
            pg_sql("SELECT a FROM t WHERE b = ? AND c IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
        );
    }

    #[test]
    fn non_finite_reals_become_null() {
        assert_eq!(Val::from(f64::NAN), Val::Null);
        assert_eq!(Val::from(f64::INFINITY), Val::Null);
        assert_eq!(Val::from(1.5), Val::Real(1.5));
    }
}
