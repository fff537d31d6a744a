//! The PostgreSQL statements of a scan, checked without a server, for the fuzz targets
//! (`docgate::fuzzing`, cargo feature `fuzzing`): the placeholders `$1…$n` of the text are
//! exactly the values bound, each used, in order.
//!
//! Not for: running anything (the SQLite target prepares and runs its statements; here
//! there is no server to prepare on).

use super::sql;
use crate::store::{ScanPosition, ScanRequest};

/// Checks the scan, the scan resumed after `after` and the count of `request` on `table`
/// (a quoted, schema-qualified name, as the catalog gives it).
pub fn check_scan(table: &str, request: &ScanRequest, after: &ScanPosition) -> Result<(), String> {
    let statements = [
        sql::select(table, "doc", request, None),
        sql::select(table, "doc", request, Some(after)),
        sql::count(table, &request.filter),
    ];
    for statement in statements {
        // Too many bound values is the store's own error, not a wrong statement.
        let Ok(statement) = statement else { continue };
        let placeholders = placeholders(&statement.text);
        let expected: Vec<usize> = (1..=statement.params.len()).collect();
        if placeholders != expected {
            return Err(format!(
                "placeholders {placeholders:?} for {} bound values: {}",
                statement.params.len(),
                statement.text
            ));
        }
    }
    Ok(())
}

/// The numbers of the `$n` placeholders in `text`, in order; `$` inside a quoted literal or
/// identifier is not one.
fn placeholders(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '$') => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if let Ok(n) = digits.parse() {
                    found.push(n);
                }
            }
            _ => {}
        }
    }
    found
}
