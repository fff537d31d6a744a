//! Projections of plain fields applied to a stored document's bytes: inclusion and exclusion
//! of paths through documents and arrays of documents copy the kept elements as they are,
//! with nothing decoded — the same document [`Projection::apply`] makes, for the
//! projections [`Projection::applies_raw`] takes (no computed field, `$slice`,
//! `$elemMatch`, positional `a.$` or `$meta`, and no path under `_id`).
//!
//! Not for: any other projection (`apply.rs` works on decoded documents).

use bson::raw::{RawArray, RawArrayBuf, RawBsonRef, RawDocument, RawDocumentBuf};

use super::{Action, Projection, ProjectionMode};
use crate::query::error::QueryError;

impl Projection {
    /// Whether [`Projection::apply_raw`] applies this projection.
    pub fn applies_raw(&self) -> bool {
        fn plain(fields: &[(String, Action)]) -> bool {
            fields.iter().all(|(_, action)| match action {
                Action::Include | Action::Exclude => true,
                Action::Nested(children) => plain(children),
                _ => false,
            })
        }
        !self.empty
            && !self.text_score
            && plain(&self.fields)
            && self.fields.iter().all(|(name, _)| name != "_id")
    }

    /// The specification of a projection [`Projection::applies_raw`] takes, which
    /// [`Projection::parse`] reads back as this projection: its paths dotted, each `1`
    /// (inclusion) or `0` (exclusion), and `_id: 0` when `_id` is left out. How a store that
    /// projects inside its statements is told what to keep.
    pub fn plain_spec(&self) -> bson::Document {
        fn paths(prefix: &str, fields: &[(String, Action)], flag: i32, spec: &mut bson::Document) {
            for (name, action) in fields {
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                match action {
                    Action::Nested(children) => paths(&path, children, flag, spec),
                    _ => {
                        spec.insert(path, flag);
                    }
                }
            }
        }
        let mut spec = bson::Document::new();
        if !self.include_id {
            spec.insert("_id", 0);
        } else if self.fields.is_empty() && self.mode == ProjectionMode::Inclusion {
            spec.insert("_id", 1);
        }
        let flag = match self.mode {
            ProjectionMode::Inclusion => 1,
            ProjectionMode::Exclusion => 0,
        };
        paths("", &self.fields, flag, &mut spec);
        spec
    }

    /// The [`Projection::plain_spec`] a store that projects inside its statements is given:
    /// only for a projection [`Projection::applies_raw`] takes whose specification reads
    /// back as this very projection.
    pub fn store_spec(&self) -> Option<bson::Document> {
        if !self.applies_raw() {
            return None;
        }
        let spec = self.plain_spec();
        (Projection::parse(&spec).ok().as_ref() == Some(self)).then_some(spec)
    }

    /// This projection of the stored document `doc` (see [`Projection::applies_raw`]).
    pub fn apply_raw(&self, doc: &RawDocument) -> Result<RawDocumentBuf, QueryError> {
        let mut out = RawDocumentBuf::new();
        match self.mode {
            ProjectionMode::Inclusion => {
                if self.include_id {
                    if let Some(id) = doc.get("_id").map_err(corrupt)? {
                        out.append(bson::raw::cstr!("_id"), id);
                    }
                }
                include(doc, &self.fields, &mut out)?;
            }
            ProjectionMode::Exclusion => {
                for element in doc {
                    let (name, value) = element.map_err(corrupt)?;
                    if !self.include_id && name.as_str() == "_id" {
                        continue;
                    }
                    exclude_element(name, value, &self.fields, &mut out)?;
                }
            }
        }
        Ok(out)
    }
}

fn corrupt(error: bson::error::Error) -> QueryError {
    QueryError::coded(1, "InternalError", format!("stored document: {error}"))
}

fn action<'f>(fields: &'f [(String, Action)], name: &str) -> Option<&'f Action> {
    fields.iter().find(|(n, _)| n == name).map(|(_, a)| a)
}

/// The elements of `source` the inclusion `fields` keep, in `source`'s order.
fn include(
    source: &RawDocument,
    fields: &[(String, Action)],
    out: &mut RawDocumentBuf,
) -> Result<(), QueryError> {
    for element in source {
        let (name, value) = element.map_err(corrupt)?;
        match action(fields, name.as_str()) {
            Some(Action::Include) => out.append(name, value),
            Some(Action::Nested(children)) => match value {
                RawBsonRef::Document(inner) => out.append(
                    name,
                    projected_document(inner, children, ProjectionMode::Inclusion)?,
                ),
                RawBsonRef::Array(items) => out.append(
                    name,
                    projected_array(items, children, ProjectionMode::Inclusion)?,
                ),
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}

/// One element of a document under the exclusion `fields`.
fn exclude_element(
    name: &bson::raw::CStr,
    value: RawBsonRef<'_>,
    fields: &[(String, Action)],
    out: &mut RawDocumentBuf,
) -> Result<(), QueryError> {
    match action(fields, name.as_str()) {
        Some(Action::Exclude) => {}
        Some(Action::Nested(children)) => match value {
            RawBsonRef::Document(inner) => out.append(
                name,
                projected_document(inner, children, ProjectionMode::Exclusion)?,
            ),
            RawBsonRef::Array(items) => out.append(
                name,
                projected_array(items, children, ProjectionMode::Exclusion)?,
            ),
            other => out.append(name, other),
        },
        _ => out.append(name, value),
    }
    Ok(())
}

/// An embedded document under the nested `children` of `mode`.
fn projected_document(
    source: &RawDocument,
    children: &[(String, Action)],
    mode: ProjectionMode,
) -> Result<RawDocumentBuf, QueryError> {
    let mut sub = RawDocumentBuf::new();
    match mode {
        ProjectionMode::Inclusion => include(source, children, &mut sub)?,
        ProjectionMode::Exclusion => {
            for element in source {
                let (name, value) = element.map_err(corrupt)?;
                exclude_element(name, value, children, &mut sub)?;
            }
        }
    }
    Ok(sub)
}

/// An array under the nested `children` of `mode`: its documents and arrays projected,
/// its other items dropped by an inclusion and kept by an exclusion.
fn projected_array(
    items: &RawArray,
    children: &[(String, Action)],
    mode: ProjectionMode,
) -> Result<RawArrayBuf, QueryError> {
    let mut out = RawArrayBuf::new();
    for item in items {
        match item.map_err(corrupt)? {
            RawBsonRef::Document(inner) => out.push(projected_document(inner, children, mode)?),
            RawBsonRef::Array(inner) => out.push(projected_array(inner, children, mode)?),
            other if mode == ProjectionMode::Exclusion => out.push(other),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Document};

    /// Documents with the shapes projections meet: nested documents, arrays of documents,
    /// of scalars and of arrays, missing paths, `_id` not first or absent.
    fn documents() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": [1, {"c": 3, "e": 4}, [{"c": 5}], "x"]}, "e": null},
            doc! {"b": [{"c": 1}, 2, {"d": 3}], "_id": {"x": 1}, "a": [1, 2]},
            doc! {"a": {"b": {"c": {"d": 1}}}, "z": true},
            doc! {"_id": "no fields"},
            doc! {},
        ]
    }

    #[test]
    fn raw_projections_make_the_documents_apply_makes() {
        let specs = [
            doc! {"a": 1},
            doc! {"a": 1, "_id": 0},
            doc! {"b.c": 1},
            doc! {"b.d.c": 1, "e": 1},
            doc! {"a.b.c": 1},
            doc! {"missing": 1},
            doc! {"a": 0},
            doc! {"b.c": 0, "_id": 0},
            doc! {"b.d.c": 0},
            doc! {"_id": 0},
            doc! {"a.b": 0, "z": 0},
        ];
        for spec in specs {
            let projection = match Projection::parse(&spec) {
                Ok(p) => p,
                Err(e) => panic!("{spec}: {e:?}"),
            };
            assert!(projection.applies_raw(), "{spec}");
            compare(&projection, &spec);
            // What a store that projects in its statement is given reads back the same.
            let plain = projection.plain_spec();
            assert_eq!(
                Projection::parse(&plain).ok(),
                Some(projection),
                "{spec} → {plain}"
            );
        }
        // `_id` named in an inclusion: raw when the parser leaves it out of the fields.
        for spec in [doc! {"_id": 1, "a": 1}, doc! {"_id": 1}] {
            if let Ok(projection) = Projection::parse(&spec) {
                if projection.applies_raw() {
                    compare(&projection, &spec);
                    let plain = projection.plain_spec();
                    assert_eq!(Projection::parse(&plain).ok(), Some(projection), "{spec}");
                }
            }
        }
    }

    fn compare(projection: &Projection, spec: &Document) {
        for document in documents() {
            let bytes = match RawDocumentBuf::try_from(&document) {
                Ok(b) => b,
                Err(e) => panic!("{e}"),
            };
            let raw = projection.apply_raw(&bytes).map(|d| d.as_bytes().to_vec());
            let decoded = projection
                .apply(&document)
                .map(|d| RawDocumentBuf::try_from(&d).map(|b| b.as_bytes().to_vec()));
            match (raw, decoded) {
                (Ok(raw), Ok(Ok(decoded))) => assert_eq!(raw, decoded, "{spec} on {document}"),
                other => panic!("{spec} on {document}: {other:?}"),
            }
        }
    }

    #[test]
    fn other_projections_are_left_to_apply() {
        for spec in [
            doc! {"_id.x": 1},
            doc! {"a": {"$slice": 1}},
            doc! {"a": {"$elemMatch": {"b": 1}}},
            doc! {"x": "$a"},
            doc! {"a.$": 1},
            doc! {},
        ] {
            let applies = Projection::parse(&spec).map(|p| p.applies_raw());
            assert!(matches!(applies, Ok(false)), "{spec}: {applies:?}");
        }
    }
}
