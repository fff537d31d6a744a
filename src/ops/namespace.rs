//! Validation of database and collection names, with MongoDB's rules and error
//! (73 InvalidNamespace), applied before a name reaches the catalog.
//!
//! Not for: mapping names to tables (the store chooses physical names).

use super::error::OpError;

/// Longest database name MongoDB accepts.
const MAX_DB_NAME_BYTES: usize = 63;
/// Longest full namespace (`db.collection`) MongoDB accepts.
const MAX_NAMESPACE_BYTES: usize = 255;

/// Checks a database name.
pub fn check_db_name(db: &str) -> Result<(), OpError> {
    if db.is_empty() {
        return Err(OpError::InvalidNamespace(
            "database name cannot be empty".into(),
        ));
    }
    if db.len() > MAX_DB_NAME_BYTES {
        return Err(OpError::InvalidNamespace(format!(
            "db name '{db}' is too long: at most {MAX_DB_NAME_BYTES} bytes"
        )));
    }
    if let Some(bad) = db
        .chars()
        .find(|c| matches!(c, '/' | '\\' | '.' | ' ' | '"' | '$' | '\0'))
    {
        return Err(OpError::InvalidNamespace(format!(
            "Invalid database name: '{db}' (contains {bad:?})"
        )));
    }
    Ok(())
}

/// Checks a collection name (for creation and writes) within database `db`.
pub fn check_collection_name(db: &str, name: &str) -> Result<(), OpError> {
    check_db_name(db)?;
    if name.is_empty() {
        return Err(OpError::InvalidNamespace(format!(
            "Invalid namespace specified '{db}.'"
        )));
    }
    if name.contains('\0') || name.contains('$') || name.starts_with('.') {
        return Err(OpError::InvalidNamespace(format!(
            "Invalid collection name: '{name}'"
        )));
    }
    if name.starts_with("system.") {
        return Err(OpError::InvalidNamespace(format!(
            "Invalid system namespace: {db}.{name}"
        )));
    }
    if db.len() + 1 + name.len() > MAX_NAMESPACE_BYTES {
        return Err(OpError::InvalidNamespace(format!(
            "Fully qualified namespace is too long. Namespace: {db}.{name} Max: {MAX_NAMESPACE_BYTES}"
        )));
    }
    Ok(())
}

/// Splits `db.collection` at the first dot.
pub fn split_namespace(namespace: &str) -> Result<(&str, &str), OpError> {
    match namespace.split_once('.') {
        Some((db, coll)) if !db.is_empty() && !coll.is_empty() => Ok((db, coll)),
        _ => Err(OpError::InvalidNamespace(format!(
            "Invalid namespace specified '{namespace}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_db_name("test").is_ok());
        assert!(check_db_name("te.st").is_err());
        assert!(check_db_name("").is_err());
        assert!(check_db_name(&"x".repeat(64)).is_err());
        assert!(check_collection_name("d", "a.b").is_ok());
        assert!(check_collection_name("d", "a$b").is_err());
        assert!(check_collection_name("d", "system.users").is_err());
        assert_eq!(split_namespace("d.a.b").unwrap(), ("d", "a.b"));
        assert!(split_namespace("nodot").is_err());
    }
}
