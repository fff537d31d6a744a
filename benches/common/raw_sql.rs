//! The direct-SQL baseline of the read benchmarks: one connection to the backend docgate
//! writes to and one prepared statement over docgate's own table, returning its `doc`
//! column (the stored BSON) — rusqlite on SQLite, tokio-postgres on PostgreSQL. This is what
//! an application reading the same rows with plain SQL would do.
//!
//! Not for: finding the table (see `sqlite_table` / `pg_table`) or timing.

use std::path::Path;

/// A prepared statement with one bound parameter.
pub enum RawSql {
    Sqlite {
        conn: rusqlite::Connection,
        sql: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        stmt: tokio_postgres::Statement,
    },
}

/// The statement's one parameter.
pub enum Param {
    Bytes(Vec<u8>),
    Int(i64),
}

impl RawSql {
    /// `sql` (placeholder `?1`) on docgate's SQLite database file.
    pub fn sqlite(file: &Path, sql: String) -> RawSql {
        let conn = super::open_sqlite(file);
        conn.prepare_cached(&sql).expect("prepare");
        RawSql::Sqlite { conn, sql }
    }

    /// `sql` (placeholder `$1`) on a connection made with `config`.
    pub async fn postgres(config: &tokio_postgres::Config, sql: &str) -> RawSql {
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let stmt = client.prepare(sql).await.expect("prepare");
        RawSql::Postgres { client, stmt }
    }

    /// Runs the statement; the `doc` column of every row.
    pub async fn docs(&self, param: &Param) -> Vec<Vec<u8>> {
        match self {
            RawSql::Sqlite { conn, sql } => {
                let value: &dyn rusqlite::ToSql = match param {
                    Param::Bytes(bytes) => bytes,
                    Param::Int(n) => n,
                };
                let mut stmt = conn.prepare_cached(sql).expect("prepare");
                stmt.query_map([value], |r| r.get(0))
                    .expect("query")
                    .collect::<Result<_, _>>()
                    .expect("rows")
            }
            RawSql::Postgres { client, stmt } => {
                let value: &(dyn tokio_postgres::types::ToSql + Sync) = match param {
                    Param::Bytes(bytes) => bytes,
                    Param::Int(n) => n,
                };
                let rows = client.query(stmt, &[value]).await.expect("query");
                rows.iter().map(|r| r.get(0)).collect()
            }
        }
    }
}
