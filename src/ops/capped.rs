//! Capped collections, for every front end: the `capped`/`size`/`max` options of `create`
//! read and checked as MongoDB 7.0 does (size rounded up to a multiple of 256 bytes), the
//! limits of a collection read back from its options, the room an insert makes — the oldest
//! documents removed in the insert's own transaction until the newest fit — and the signal
//! that wakes tailable `awaitData` cursors when documents arrive.
//!
//! Insertion order is the store's sequence (SQLite's rowid, PostgreSQL's identity `n`):
//! natural order, what eviction removes first, and where a tailable cursor resumes.
//!
//! Not for: the SQL that finds the overflow (`Store::capped_overflow`), the cursors
//! themselves (`read_cursor`, `cursors`), or `collMod`'s `cappedSize`/`cappedMax`.

use super::validation::{DocumentValidation, ValidationCheck};
use std::collections::HashMap;
use std::sync::Mutex;

use bson::{Bson, Document};
use tokio::sync::watch;

use super::OpError;
use crate::store::{CollectionRecord, StoreSession};

/// MongoDB's upper bound on `size`: 1 PB.
const MAX_CAPPED_BYTES: i64 = 1024 * 1024 * 1024 * 1024 * 1024;
/// `max` must stay below 2^31; 0 and negatives mean "no document limit" (2^31 - 1).
const NO_DOCUMENT_LIMIT: i64 = 0x7fff_ffff;

/// The limits of a capped collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CappedLimits {
    /// The most bytes (sum of BSON sizes) its documents may take.
    pub max_bytes: u64,
    /// The most documents it may hold, if `max` was given (2^31-1 for a `max` of 0 or less,
    /// as MongoDB records it).
    pub max_documents: Option<u64>,
}

impl CappedLimits {
    /// The limits of a collection, from the options it was created with; None when it is
    /// not capped.
    pub fn of(record: &CollectionRecord) -> Option<CappedLimits> {
        let options = &record.options;
        if !options.get("capped").and_then(truth).unwrap_or(false) {
            return None;
        }
        let number = |field: &str| options.get(field).and_then(as_number);
        let max_bytes = number("size").and_then(|n| u64::try_from(n).ok())?;
        let max_documents = number("max")
            .filter(|n| *n > 0)
            .and_then(|n| u64::try_from(n).ok());
        Some(CappedLimits {
            max_bytes,
            max_documents,
        })
    }
}

/// Whether `record` is a capped collection.
pub fn is_capped(record: &CollectionRecord) -> bool {
    CappedLimits::of(record).is_some()
}

/// The options `create` keeps for `capped`, `size` and `max` (None when the collection is
/// not capped), as MongoDB 7.0 records and lists them: `{capped: true, size, max}` with
/// `size` rounded up to a multiple of 256 and `max` only when given (0 or negative: 2^31-1).
pub fn create_options(
    capped: Option<&Bson>,
    size: Option<&Bson>,
    max: Option<&Bson>,
) -> Result<Option<Document>, OpError> {
    let capped = match capped {
        None | Some(Bson::Null) => false,
        Some(value) => truth(value)
            .ok_or_else(|| wrong_type("capped", value, "[bool, long, int, decimal, double]"))?,
    };
    let number = |field: &str, value: Option<&Bson>| -> Result<Option<i64>, OpError> {
        match value {
            None | Some(Bson::Null) => Ok(None),
            Some(value) => as_number(value)
                .map(Some)
                .ok_or_else(|| wrong_type(field, value, "[long, int, decimal, double]")),
        }
    };
    let size = number("size", size)?;
    let max = number("max", max)?;
    if capped && size.is_none() {
        return Err(OpError::InvalidOptions(
            "the 'size' field is required when 'capped' is true".into(),
        ));
    }
    if !capped && (size.is_some() || max.is_some()) {
        return Err(OpError::InvalidOptions(
            "the 'capped' field needs to be true when either the 'size' or 'max' fields are present"
                .into(),
        ));
    }
    let Some(size) = size else {
        return Ok(None);
    };
    if size < 1 {
        return Err(OpError::FieldOutOfRange(format!(
            "BSON field 'size' value must be >= 1, actual value '{size}'"
        )));
    }
    if size > MAX_CAPPED_BYTES {
        return Err(OpError::FieldOutOfRange(format!(
            "BSON field 'size' value must be <= {MAX_CAPPED_BYTES}, actual value '{size}'"
        )));
    }
    let mut options = bson::doc! {"capped": true, "size": number_bson((size + 0xff) & !0xff)};
    if let Some(max) = max {
        if max > NO_DOCUMENT_LIMIT {
            return Err(OpError::FieldOutOfRange(format!(
                "BSON field 'max' value must be < {}, actual value '{max}'",
                NO_DOCUMENT_LIMIT + 1
            )));
        }
        let max = if max <= 0 { NO_DOCUMENT_LIMIT } else { max };
        options.insert("max", number_bson(max));
    }
    Ok(Some(options))
}

/// A document larger than the whole collection can never be kept: BadValue, as MongoDB
/// answers it (a write error of that document).
pub fn check_fits(limits: &CappedLimits, document_bytes: usize) -> Result<(), OpError> {
    if u64::try_from(document_bytes).unwrap_or(u64::MAX) > limits.max_bytes {
        return Err(OpError::BadValue(
            "object to insert exceeds cappedMaxSize".into(),
        ));
    }
    Ok(())
}

/// MongoDB's refusal (263) of a write to a capped collection inside a multi-document
/// transaction: `in_transaction` says whether the write runs in one
/// (`OpScope::in_multi_document_transaction`), `collection` is its target if it exists.
pub fn check_transaction_write(
    in_transaction: bool,
    collection: Option<&crate::catalog::CollectionInfo>,
) -> Result<(), OpError> {
    match collection {
        Some(info) if in_transaction && is_capped(&info.record) => {
            Err(OpError::NotInTransaction(format!(
                "Collection '{}.{}' is a capped collection. Writes in transactions are not allowed on capped collections.",
                info.record.db, info.record.name
            )))
        }
        _ => Ok(()),
    }
}

/// Before an insert into a capped collection, in the insert's transaction: other writers
/// of it wait until this transaction ends (insertion order is then commit order).
pub async fn before_insert(
    session: &mut dyn StoreSession,
    record: &CollectionRecord,
) -> Result<(), OpError> {
    session.serialize_capped_writes(record).await?;
    Ok(())
}

/// After an insert into a capped collection (by `insert`, an upsert or `$merge`), in its
/// transaction: removes the oldest documents until the rest fit the limits. Answers how
/// many were removed.
pub async fn make_room(
    session: &mut dyn StoreSession,
    record: &CollectionRecord,
    limits: &CappedLimits,
) -> Result<u64, OpError> {
    let oldest = session
        .capped_overflow(record, limits.max_bytes, limits.max_documents)
        .await?;
    if oldest.is_empty() {
        return Ok(0);
    }
    Ok(session.delete(record, &oldest).await?)
}

/// `convertToCapped` (`replace: true`: the source becomes the capped collection) and
/// `cloneCollectionAsCapped` (a new capped collection `target` beside the source): the
/// newest documents of `source` that fit in `size` bytes, in natural order, copied into a
/// new capped collection with only the `_id` index (MongoDB copies no other index), in one
/// transaction; the source's other options (its collation) are kept. Writers of the source
/// wait while it is read.
pub async fn copy_as_capped(
    state: &crate::state::AppState,
    source: (&str, &str),
    target: &str,
    size: Option<&Bson>,
    replace: bool,
) -> Result<(), OpError> {
    let (db, name) = source;
    if !state.store.supports_capped() {
        return Err(OpError::NotSupported(format!(
            "capped collections are not supported on the {} backend",
            state.store.backend_name()
        )));
    }
    let capped = create_options(Some(&Bson::Boolean(true)), size, None)?
        .ok_or_else(|| OpError::missing_field("size"))?;
    super::namespace::check_collection_name(db, target)?;
    let mut transaction =
        super::transaction::Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let snapshot = crate::catalog::read_snapshot(transaction.session()).await?;
    let Some(info) = snapshot.info(db, name).cloned() else {
        return Err(OpError::NamespaceNotFound(format!(
            "source collection {db}.{name} does not exist"
        )));
    };
    if !replace && snapshot.info(db, target).is_some() {
        return Err(OpError::NamespaceExists(format!(
            "collection {db}.{target} already exists"
        )));
    }
    let mut options = capped;
    for (key, value) in &info.record.options {
        if !matches!(key.as_str(), "capped" | "size" | "max") {
            options.insert(key.clone(), value.clone());
        }
    }
    let limits = CappedLimits::of(&CollectionRecord {
        options: options.clone(),
        ..info.record.clone()
    })
    .ok_or_else(|| OpError::BadValue("the capped options could not be read back".into()))?;
    let session = transaction.session();
    session
        .lock_collection_for_index_build(&info.record)
        .await?;
    let rows = session
        .scan(&info.record, &crate::store::ScanRequest::all())
        .await?;
    // The newest documents that fit, as inserting them all in order would leave.
    let mut bytes = 0u64;
    let mut first_kept = rows.len();
    for (at, row) in rows.iter().enumerate().rev() {
        bytes += u64::try_from(row.len()).unwrap_or(u64::MAX);
        if bytes > limits.max_bytes {
            break;
        }
        first_kept = at;
    }
    let mut stored = Vec::with_capacity(rows.len() - first_kept);
    // The documents are copied as they are stored, as MongoDB copies them: the validator
    // (kept in the options) judges later writes, not the copy.
    let copied = ValidationCheck::new_document(None, DocumentValidation::Enforce);
    for row in &rows[first_kept..] {
        let document = super::read::decode_document(row)?;
        let prepared =
            super::prepare::prepare_for_storage(document, &[], state.settings.documents, &copied)?;
        stored.push(prepared.stored);
    }
    let temporary = if replace {
        format!(
            "tmp.convertToCapped.{}",
            bson::oid::ObjectId::new().to_hex()
        )
    } else {
        target.to_string()
    };
    let created = session.create_collection(db, &temporary, &options).await?;
    session.insert(&created, &stored, true).await?;
    // The source's collation stays the copy's default, and so its `_id` index's.
    let copied_documents = stored
        .iter()
        .map(|document| super::read::decode_document(&document.bson))
        .collect::<Result<Vec<_>, _>>()?;
    super::indexes::build_collated_id_index(session, &created, &copied_documents).await?;
    if replace {
        session.drop_collection(&info.record).await?;
        session.rename_collection(&created, db, name).await?;
    }
    transaction.changed_catalog();
    transaction.commit().await
}

/// Per capped collection (by UUID) with a waiting cursor, a counter bumped after every
/// committed insert into it, which tailable `awaitData` cursors of this process watch. Another process writing to
/// the same database (PostgreSQL) is not seen here: waiting cursors also look again at
/// [`AWAIT_POLL_INTERVAL`].
#[derive(Default)]
pub struct CappedInserts {
    by_collection: Mutex<HashMap<Vec<u8>, watch::Sender<u64>>>,
}

/// How often a waiting `awaitData` cursor looks for documents that another process
/// inserted (its own process's inserts wake it at once).
pub const AWAIT_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

impl CappedInserts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, watch::Sender<u64>>> {
        self.by_collection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A receiver that sees the next insert into the collection `uuid` (subscribe before
    /// reading, so no insert between the read and the wait is missed).
    /// Entries nobody waits on any more are dropped here, so the map holds only the
    /// collections with a waiting cursor (also ones replaced or dropped since).
    pub fn subscribe(&self, uuid: &[u8]) -> watch::Receiver<u64> {
        let mut by_collection = self.lock();
        by_collection.retain(|_, sender| sender.receiver_count() > 0);
        by_collection
            .entry(uuid.to_vec())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Wakes the cursors waiting on the collection `uuid` (after an insert committed).
    pub fn announce(&self, uuid: &[u8]) {
        if let Some(sender) = self.lock().get(uuid) {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Forgets a collection that was dropped.
    pub fn forget(&self, uuid: &[u8]) {
        self.lock().remove(uuid);
    }
}

/// A boolean as MongoDB reads `capped` (numbers count).
fn truth(value: &Bson) -> Option<bool> {
    match value {
        Bson::Boolean(b) => Some(*b),
        Bson::Int32(n) => Some(*n != 0),
        Bson::Int64(n) => Some(*n != 0),
        Bson::Double(n) => Some(*n != 0.0),
        Bson::Decimal128(_) => as_number(value).map(|n| n != 0),
        _ => None,
    }
}

/// A number as MongoDB's `safeNumberLong` reads it (doubles truncated, saturating).
fn as_number(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(n) if n.is_nan() => Some(0),
        Bson::Double(n) => Some(*n as i64),
        Bson::Decimal128(d) => d.to_string().parse::<f64>().ok().map(|n| n as i64),
        _ => None,
    }
}

/// An int when it fits, else a long (MongoDB's `appendNumber`).
fn number_bson(n: i64) -> Bson {
    i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> OpError {
    OpError::TypeMismatch(format!(
        "BSON field 'create.{field}' is the wrong type '{}', expected types '{expected}'",
        crate::query::bson_type_name(value)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn options(body: Document) -> Result<Option<Document>, OpError> {
        create_options(body.get("capped"), body.get("size"), body.get("max"))
    }

    #[test]
    fn size_is_rounded_up_to_256_and_max_kept() {
        assert_eq!(
            options(doc! {"capped": true, "size": 1000, "max": 5}).unwrap(),
            Some(doc! {"capped": true, "size": 1024, "max": 5})
        );
        assert_eq!(
            options(doc! {"capped": 1, "size": 4096.0}).unwrap(),
            Some(doc! {"capped": true, "size": 4096})
        );
        assert_eq!(
            options(doc! {"capped": true, "size": 1, "max": 0}).unwrap(),
            Some(doc! {"capped": true, "size": 256, "max": 0x7fff_ffff})
        );
        assert_eq!(options(doc! {"capped": false}).unwrap(), None);
    }

    #[test]
    fn mongodb_refusals() {
        let code = |body| options(body).unwrap_err().code();
        assert_eq!(code(doc! {"capped": true}), 72);
        assert_eq!(code(doc! {"capped": true, "max": 3}), 72);
        assert_eq!(code(doc! {"size": 4096}), 72);
        assert_eq!(code(doc! {"capped": true, "size": 0}), 51024);
        assert_eq!(code(doc! {"capped": true, "size": "big"}), 14);
        assert_eq!(
            code(doc! {"capped": true, "size": 4096, "max": 1i64 << 31}),
            51024
        );
    }
}
