//! Writing through dotted paths for update operators: find (or create) the slot a path names,
//! growing arrays with nulls for numeric components, expanding `$[]`, `$[identifier]`
//! (array filters) and `$` (the matched position), and MongoDB's PathNotViable errors.
//!
//! Not for: what an operator does at the slot (`update/ops.rs`) or read-only lookups
//! (`value/path.rs`).

use crate::query::error::QueryError;
use crate::query::filter::Filter;
use crate::query::value::path::array_index;
use bson::{Bson, Document};

/// Context an update may need beyond the document: the array position the query matched
/// (for `$`) and the array filters (for `$[identifier]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateContext {
    /// Position in the first array of the path that the query matched.
    pub matched_index: Option<usize>,
    /// `arrayFilters`: identifier and the filter its elements must match.
    pub array_filters: Vec<(String, Filter)>,
}

impl UpdateContext {
    /// Parses the `arrayFilters` option: each document names one identifier through its
    /// top-level paths (`{"x.a": 1}` or `{x: {$gt: 1}}`).
    pub fn with_array_filters(filters: &[Document]) -> Result<UpdateContext, QueryError> {
        let mut parsed = Vec::with_capacity(filters.len());
        for f in filters {
            let mut identifier: Option<String> = None;
            for key in f.keys() {
                let id = key.split('.').next().unwrap_or_default().to_string();
                if identifier.as_ref().is_some_and(|existing| *existing != id) {
                    return Err(QueryError::failed_to_parse(format!(
                        "Error parsing array filter :: caused by :: Expected a single top-level field name, found '{}' and '{id}'",
                        identifier.unwrap_or_default()
                    )));
                }
                identifier = Some(id);
            }
            let Some(identifier) = identifier else {
                return Err(QueryError::failed_to_parse(
                    "Cannot use an expression without a top-level field name in arrayFilters",
                ));
            };
            if parsed.iter().any(|(id, _)| *id == identifier) {
                return Err(QueryError::failed_to_parse(format!(
                    "Found multiple array filters with the same top-level field name {identifier}"
                )));
            }
            parsed.push((identifier, Filter::parse(f)?));
        }
        Ok(UpdateContext {
            matched_index: None,
            array_filters: parsed,
        })
    }

    /// Sets the position the positional `$` stands for: where `query` matched `doc` (see
    /// `filter/positional.rs`).
    pub fn with_query_match(mut self, query: &Filter, doc: &Document) -> Self {
        self.matched_index = crate::query::filter::positional::matched_array_position(query, doc);
        self
    }

    fn element_passes(&self, identifier: &str, element: &Bson) -> Result<bool, QueryError> {
        let filter = self
            .array_filters
            .iter()
            .find(|(id, _)| id == identifier)
            .map(|(_, f)| f)
            .ok_or_else(|| {
                QueryError::bad_value(format!(
                    "No array filter found for identifier '{identifier}' in path"
                ))
            })?;
        let mut wrapper = Document::new();
        wrapper.insert(identifier, element.clone());
        Ok(filter.matches(&wrapper))
    }
}

/// A place a value lives or would live: a document field or an array position.
pub enum Slot<'a> {
    /// `doc[name]`
    Field(&'a mut Document, String),
    /// `array[index]` (the index may be past the end)
    Element(&'a mut Vec<Bson>, usize),
}

impl Slot<'_> {
    /// The current value, if any.
    pub fn get(&self) -> Option<&Bson> {
        match self {
            Slot::Field(d, name) => d.get(name.as_str()),
            Slot::Element(items, i) => items.get(*i),
        }
    }

    /// The current value, mutably.
    pub fn get_mut(&mut self) -> Option<&mut Bson> {
        match self {
            Slot::Field(d, name) => d.get_mut(name.as_str()),
            Slot::Element(items, i) => items.get_mut(*i),
        }
    }

    /// Sets the value, appending a new field or padding the array with nulls.
    pub fn set(&mut self, value: Bson) {
        match self {
            Slot::Field(d, name) => {
                if let Some(existing) = d.get_mut(name.as_str()) {
                    *existing = value;
                } else {
                    d.insert(name.clone(), value);
                }
            }
            Slot::Element(items, i) => {
                while items.len() <= *i {
                    items.push(Bson::Null);
                }
                items[*i] = value;
            }
        }
    }

    /// Removes a field; an array element becomes null (positions never shift).
    pub fn remove(&mut self) {
        match self {
            Slot::Field(d, name) => {
                d.remove(name.as_str());
            }
            Slot::Element(items, i) => {
                if let Some(item) = items.get_mut(*i) {
                    *item = Bson::Null;
                }
            }
        }
    }

    /// The last path component, for messages.
    pub fn name(&self) -> String {
        match self {
            Slot::Field(_, name) => name.clone(),
            Slot::Element(_, i) => i.to_string(),
        }
    }
}

/// What to do with each slot a path reaches.
pub type SlotAction<'f> = dyn FnMut(Slot<'_>) -> Result<(), QueryError> + 'f;

/// Visits the slot(s) `path` names in `doc`. With `create`, missing intermediate documents
/// are created and a scalar in the way is a PathNotViable error; without it, such paths are
/// silently skipped (e.g. `$unset` of a path that does not exist).
pub fn visit(
    doc: &mut Document,
    path: &str,
    create: bool,
    context: &UpdateContext,
    action: &mut SlotAction<'_>,
) -> Result<(), QueryError> {
    let parts: Vec<&str> = path.split('.').collect();
    walk_document(doc, &parts, create, context, action)
}

fn not_viable(field: &str, container_name: &str, container: &Bson) -> QueryError {
    QueryError::path_not_viable(format!(
        "Cannot create field '{field}' in element {{{container_name}: {container}}}"
    ))
}

fn walk_document(
    doc: &mut Document,
    parts: &[&str],
    create: bool,
    context: &UpdateContext,
    action: &mut SlotAction<'_>,
) -> Result<(), QueryError> {
    let Some((head, rest)) = parts.split_first() else {
        return Ok(());
    };
    if head.is_empty() {
        return Err(QueryError::location(
            56,
            "An update path contains an empty field name, which is not allowed.",
        ));
    }
    if rest.is_empty() {
        return action(Slot::Field(doc, head.to_string()));
    }
    if !doc.contains_key(*head) {
        if !create {
            return Ok(());
        }
        doc.insert(head.to_string(), Document::new());
    }
    match doc.get_mut(*head) {
        Some(value) => walk_value(value, head, rest, create, context, action),
        None => Ok(()),
    }
}

fn walk_value(
    value: &mut Bson,
    name: &str,
    rest: &[&str],
    create: bool,
    context: &UpdateContext,
    action: &mut SlotAction<'_>,
) -> Result<(), QueryError> {
    match value {
        Bson::Document(sub) => walk_document(sub, rest, create, context, action),
        Bson::Array(items) => walk_array(items, name, rest, create, context, action),
        other => {
            if create {
                Err(not_viable(rest.first().copied().unwrap_or(""), name, other))
            } else {
                Ok(())
            }
        }
    }
}

fn walk_array(
    items: &mut Vec<Bson>,
    name: &str,
    parts: &[&str],
    create: bool,
    context: &UpdateContext,
    action: &mut SlotAction<'_>,
) -> Result<(), QueryError> {
    let Some((head, rest)) = parts.split_first() else {
        return Ok(());
    };
    let positions: Vec<usize> = if *head == "$[]" {
        (0..items.len()).collect()
    } else if let Some(identifier) = head.strip_prefix("$[").and_then(|h| h.strip_suffix(']')) {
        let mut chosen = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if context.element_passes(identifier, item)? {
                chosen.push(i);
            }
        }
        chosen
    } else if *head == "$" {
        match context.matched_index {
            Some(i) => vec![i],
            None => {
                return Err(QueryError::bad_value(
                    "The positional operator did not find the match needed from the query.",
                ))
            }
        }
    } else if let Some(i) = array_index(head) {
        vec![i]
    } else if create {
        return Err(not_viable(head, name, &Bson::Array(items.clone())));
    } else {
        return Ok(());
    };
    for i in positions {
        if create && i > items.len().saturating_add(MAX_ARRAY_PADDING) {
            return Err(QueryError::bad_value(format!(
                "can't backfill array to larger than {MAX_ARRAY_PADDING} elements"
            )));
        }
        if rest.is_empty() {
            action(Slot::Element(items, i))?;
            continue;
        }
        if i >= items.len() {
            if !create {
                continue;
            }
            while items.len() < i {
                items.push(Bson::Null);
            }
            items.push(Bson::Document(Document::new()));
        }
        if let Some(item) = items.get_mut(i) {
            walk_value(item, &i.to_string(), rest, create, context, action)?;
        }
    }
    Ok(())
}

/// How many nulls an update may add to reach a numeric path component (MongoDB's limit).
pub const MAX_ARRAY_PADDING: usize = 1_500_000;
