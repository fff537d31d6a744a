//! One pooled Oracle connection and the synchronous helpers every module of the backend
//! uses: bound values ([`Bind`]), statements that return rows or counts, DDL that never
//! commits the caller's transaction, the "own transaction or savepoint" scope of a call, and
//! the mapping of Oracle errors to `StoreError`.
//!
//! The `oracle` crate (ODPI-C) is blocking: every function here runs on a blocking thread
//! (`session.rs` moves the connection into `spawn_blocking` for each call), never on a
//! tokio worker.
//!
//! Transactions: Oracle opens a transaction implicitly at the first DML and never
//! autocommits here. Outside the caller's `begin`, a call is its own transaction
//! ([`OraConn::atomic`] commits it, or rolls it back on failure); inside, a call that runs
//! several statements runs in `SAVEPOINT dg_op`, so a failure undoes just that call. A single
//! failed statement is undone by Oracle itself (statement-level atomicity).
//!
//! DDL: Oracle commits before and after every DDL statement. So DDL goes through an
//! autonomous transaction (`PRAGMA AUTONOMOUS_TRANSACTION` + `EXECUTE IMMEDIATE`), which
//! commits only itself: the catalog rows written around it stay in the caller's
//! transaction. A `CREATE` whose catalog row is later rolled back leaves an unreferenced
//! table behind (generated names are never reused, so it is never mistaken for a
//! collection); a `DROP` is deferred until the transaction that removed the catalog row has
//! committed ([`OraConn::drop_after_commit`]).
//!
//! Not for: SQL about collections or documents (`catalog.rs`, `write.rs`, `sql.rs`).

use oracle::sql_type::{OracleType, ToSql};
use oracle::{Connection, Row};

use super::super::StoreError;

/// A value bound to a placeholder `:n`. Values are always bound, never spliced.
#[derive(Clone, Debug, PartialEq)]
pub enum Bind {
    /// A `RAW` (keys, UUIDs, short BSON).
    Raw(Vec<u8>),
    /// A `BLOB` (documents, replies).
    Blob(Vec<u8>),
    /// A `VARCHAR2`.
    Text(String),
    /// A `CLOB` (JSON text that may pass VARCHAR2's limit).
    Clob(String),
    /// A `NUMBER`.
    Int(i64),
    /// A `BINARY_DOUBLE`.
    Double(f64),
    /// A `BOOLEAN` (SQL BOOLEAN is new in 23ai).
    Bool(bool),
    /// SQL `NULL` as a `VARCHAR2`.
    NullText,
}

impl Bind {
    /// How the value is shown in golden files and logs (never a password: binds here are
    /// data and names, and logons do not go through `Bind`).
    pub fn describe(&self) -> String {
        fn hex(bytes: &[u8]) -> String {
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        }
        match self {
            Bind::Raw(b) => format!("RAW {}", hex(b)),
            Bind::Blob(b) => format!("BLOB {} bytes", b.len()),
            Bind::Text(s) => format!("VARCHAR2 {s:?}"),
            Bind::Clob(s) => format!("CLOB {s:?}"),
            Bind::Int(n) => format!("NUMBER {n}"),
            Bind::Double(d) => format!("BINARY_DOUBLE {d:?}"),
            Bind::Bool(b) => format!("BOOLEAN {b}"),
            Bind::NullText => "VARCHAR2 NULL".to_string(),
        }
    }
}

/// The values of `binds` as the `oracle` crate takes them.
struct Bound {
    values: Vec<Box<dyn ToSql>>,
}

impl Bound {
    fn of(binds: &[Bind]) -> Bound {
        let values = binds
            .iter()
            .map(|bind| -> Box<dyn ToSql> {
                match bind.clone() {
                    Bind::Raw(b) => Box::new(b),
                    Bind::Blob(b) => Box::new(Typed(b, OracleType::BLOB)),
                    Bind::Text(s) => Box::new(s),
                    Bind::Clob(s) => Box::new(Typed(s, OracleType::CLOB)),
                    Bind::Int(n) => Box::new(n),
                    Bind::Double(d) => Box::new(d),
                    Bind::Bool(b) => Box::new(b),
                    Bind::NullText => Box::new(Option::<String>::None),
                }
            })
            .collect();
        Bound { values }
    }

    fn refs(&self) -> Vec<&dyn ToSql> {
        self.values.iter().map(|v| v.as_ref()).collect()
    }
}

/// An owned value with the Oracle type it is bound as.
struct Typed<T>(T, OracleType);

impl<T: ToSql> ToSql for Typed<T> {
    fn oratype(&self, _conn: &Connection) -> oracle::Result<OracleType> {
        Ok(self.1.clone())
    }
    fn to_sql(&self, val: &mut oracle::SqlValue) -> oracle::Result<()> {
        self.0.to_sql(val)
    }
}

/// One pooled connection with the transaction state the backend tracks about it.
pub struct OraConn {
    conn: Connection,
    /// The caller opened a transaction with `begin`/`begin_snapshot`.
    pub(super) in_tx: bool,
    /// Tables to drop once the transaction that unrecorded them commits.
    pending_drops: Vec<String>,
    /// A call failed with a connection error; the pool must not hand it out again.
    pub(super) broken: bool,
}

impl OraConn {
    pub(super) fn new(conn: Connection) -> OraConn {
        OraConn {
            conn,
            in_tx: false,
            pending_drops: Vec::new(),
            broken: false,
        }
    }

    fn check<T>(&mut self, r: oracle::Result<T>) -> Result<T, StoreError> {
        r.map_err(|e| {
            let mapped = ora_err(&e);
            if matches!(mapped, StoreError::Unavailable(_)) {
                self.broken = true;
            }
            mapped
        })
    }

    /// Runs a statement that returns rows.
    pub(super) fn query(&mut self, sql: &str, binds: &[Bind]) -> Result<Vec<Row>, StoreError> {
        let bound = Bound::of(binds);
        let r = self.conn.query(sql, &bound.refs()).and_then(|rows| {
            let mut out = Vec::new();
            for row in rows {
                out.push(row?);
            }
            Ok(out)
        });
        self.check(r)
    }

    /// Runs a statement that returns one row (an error when it returns none).
    pub(super) fn query_one(&mut self, sql: &str, binds: &[Bind]) -> Result<Row, StoreError> {
        let mut rows = self.query(sql, binds)?;
        match rows.pop() {
            Some(row) => Ok(row),
            None => Err(StoreError::Database(format!(
                "expected a row from: {}",
                first_line(sql)
            ))),
        }
    }

    /// Runs a statement and answers how many rows it changed.
    pub(super) fn execute(&mut self, sql: &str, binds: &[Bind]) -> Result<u64, StoreError> {
        let bound = Bound::of(binds);
        let r = self
            .conn
            .execute(sql, &bound.refs())
            .and_then(|stmt| stmt.row_count());
        self.check(r)
    }

    /// Runs the same DML once per row of `rows` in one round trip (array DML). With
    /// `batch_errors`, rows that fail are reported (their indexes and errors) and the others
    /// are applied; without, the first failure is the answer.
    pub(super) fn execute_many(
        &mut self,
        sql: &str,
        rows: &[Vec<Bind>],
        batch_errors: bool,
    ) -> Result<Vec<(usize, StoreError)>, StoreError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let size = rows.len().min(10_000);
        let r = (|| -> oracle::Result<Vec<(usize, StoreError)>> {
            let mut builder = self.conn.batch(sql, size);
            if batch_errors {
                builder.with_batch_errors();
            }
            let mut batch = builder.build()?;
            let mut failed = Vec::new();
            for (start, chunk) in rows.chunks(size).enumerate().map(|(i, c)| (i * size, c)) {
                for row in chunk {
                    let bound = Bound::of(row);
                    batch.append_row(&bound.refs())?;
                }
                match batch.execute() {
                    Ok(()) => {}
                    Err(e) if batch_errors && e.batch_errors().is_some() => {
                        for db in e.batch_errors().into_iter().flatten() {
                            let code = db.code();
                            failed.push((
                                start + db.offset() as usize,
                                db_code_err(code, db.message()),
                            ));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(failed)
        })();
        self.check(r)
    }

    /// Runs DDL in an autonomous transaction (see the module doc): it commits only itself.
    pub(super) fn ddl(&mut self, text: &str) -> Result<(), StoreError> {
        self.execute(AUTONOMOUS_DDL, &[Bind::Text(text.to_owned())])
            .map(|_| ())
    }

    /// Drops `table` once the current transaction commits (at once outside one).
    pub(super) fn drop_after_commit(&mut self, table: String) {
        self.pending_drops.push(table);
    }

    /// Runs `body` atomically: as its own transaction outside the caller's (committed on
    /// success, with the deferred drops after it; rolled back on failure), in `SAVEPOINT
    /// dg_op` inside it.
    pub(super) fn atomic<T>(
        &mut self,
        body: impl FnOnce(&mut OraConn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.in_tx {
            self.execute("SAVEPOINT dg_op", &[])?;
            let result = body(self);
            if result.is_err() {
                let _ = self.execute("ROLLBACK TO SAVEPOINT dg_op", &[]);
            }
            return result;
        }
        match body(self) {
            Ok(value) => {
                self.end(true)?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.end(false);
                Err(e)
            }
        }
    }

    /// Ends the transaction: `COMMIT` (then the deferred drops) or `ROLLBACK` (forgetting
    /// them).
    pub(super) fn end(&mut self, commit: bool) -> Result<(), StoreError> {
        self.in_tx = false;
        if !commit {
            self.pending_drops.clear();
            let r = self.conn.rollback();
            return self.check(r);
        }
        let r = self.conn.commit();
        if let Err(e) = self.check(r) {
            self.pending_drops.clear();
            return Err(e);
        }
        for table in std::mem::take(&mut self.pending_drops) {
            // The catalog no longer names it; a table left behind is harmless.
            let _ = self.ddl(&format!("DROP TABLE {table} PURGE"));
        }
        Ok(())
    }

    /// Starts the caller's transaction; with `serializable`, Oracle's SERIALIZABLE
    /// isolation (one snapshot for every read, ORA-08177 on a conflicting write).
    pub(super) fn begin(&mut self, serializable: bool) -> Result<(), StoreError> {
        if self.in_tx {
            return Err(StoreError::Database(
                "a transaction is already open on this session".into(),
            ));
        }
        // Anything a previous call left open is ended first (there should be nothing).
        let r = self.conn.rollback();
        self.check(r)?;
        if serializable {
            self.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", &[])?;
        }
        self.in_tx = true;
        Ok(())
    }
}

impl Drop for OraConn {
    /// A connection that broke leaves the pool for good (`DPI_MODE_CONN_CLOSE_DROP`); a
    /// healthy one goes back to it.
    fn drop(&mut self) {
        if self.broken {
            let _ = self.conn.close_with_mode(oracle::conn::CloseMode::Drop);
        }
    }
}

/// The autonomous block every DDL statement runs in (the statement is bound as `:1`).
pub const AUTONOMOUS_DDL: &str = "DECLARE PRAGMA AUTONOMOUS_TRANSACTION; \
     BEGIN EXECUTE IMMEDIATE :1; COMMIT; END;";

fn first_line(sql: &str) -> &str {
    sql.lines().next().unwrap_or(sql)
}

/// A column of a row, with a decoding failure as `Corrupt`.
pub(super) fn get<T: oracle::sql_type::FromSql>(row: &Row, i: usize) -> Result<T, StoreError> {
    row.get(i)
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {e}")))
}

/// `"NAME"` with embedded quotes doubled: an Oracle identifier. Generated names only.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// What ODPI-C answers when no Oracle Client library can be loaded.
pub const CLIENT_MISSING: i32 = 1047;

/// Maps an error of the `oracle` crate (see [`db_code_err`] for Oracle's own codes).
pub(super) fn ora_err(e: &oracle::Error) -> StoreError {
    if e.dpi_code() == Some(CLIENT_MISSING) {
        return StoreError::Unavailable(client_missing(&e.to_string()));
    }
    if let Some(code) = e.oci_code() {
        let message = e.db_error().map(|d| d.message().to_owned());
        return db_code_err(code, &message.unwrap_or_else(|| e.to_string()));
    }
    if let Some(code) = e.dpi_code() {
        // DPI-1010 not connected, DPI-1080 connection closed by ORA-3113, DPI-1067 call
        // timeout: the connection is gone.
        if matches!(code, 1010 | 1080 | 1067) {
            return StoreError::Unavailable(e.to_string());
        }
    }
    StoreError::Database(e.to_string())
}

/// Maps an Oracle error code (`ORA-nnnnn`) and its message.
pub(super) fn db_code_err(code: i32, message: &str) -> StoreError {
    let text = format!("ORA-{code:05}: {message}");
    match code {
        // unique constraint violated
        1 => StoreError::DuplicateKey,
        // can't serialize access, deadlock, resource busy (NOWAIT / WAIT n)
        8177 | 60 | 54 | 30006 => StoreError::WriteConflict(text),
        // unable to extend a segment / tablespace quota exceeded
        1653 | 1654 | 1688 | 1691 | 1536 | 30036 => StoreError::OutOfDiskSpace(text),
        // table or view does not exist: another instance dropped the collection
        942 => StoreError::StaleCatalog(text),
        // end-of-file on communication channel, not connected, TNS errors, shutdown
        3113 | 3114 | 3135 | 1012 | 1033 | 1034 | 1089 | 1090 | 1092 | 12170 | 12514 | 12516
        | 12518 | 12519 | 12520 | 12521 | 12528 | 12537 | 12541 | 12543 | 12547 | 28547 => {
            StoreError::Unavailable(text)
        }
        _ => StoreError::Database(text),
    }
}

/// The message for a docgate that cannot load the Oracle Client: ODPI-C's own words
/// (`DPI-1047: Cannot locate a 64-bit Oracle Client library: …`) and how to install one.
pub fn client_missing(odpi: &str) -> String {
    format!(
        "{odpi}\n\
         The Oracle backend needs the Oracle Instant Client (Basic or Basic Light, 19c or \
         newer) at run time. Install it, e.g. unzip instantclient-basic-linux.x64-*.zip into \
         /opt/oracle/instantclient and run `echo /opt/oracle/instantclient > \
         /etc/ld.so.conf.d/oracle-instantclient.conf && ldconfig` (or point LD_LIBRARY_PATH \
         at it; Debian/Ubuntu also need libaio1). See \
         https://odpi-c.readthedocs.io/en/latest/user_guide/installation.html"
    )
}
