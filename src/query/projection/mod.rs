//! Find-style projections: inclusion (`{a: 1, "b.c": 1}`), exclusion (`{a: 0}`), `_id`
//! included unless excluded, nested paths through documents and arrays of documents,
//! `$slice`, `$elemMatch`, and computed fields from aggregation expressions
//! (`{x: "$a.b"}`, `{x: {$literal: 1}}`), with MongoDB's errors for mixed projections and
//! path collisions.
//!
//! The positional `a.$` form takes the query (`apply_with_query`).
//!
//! Not for: `$meta` (rejected with a clear error), or the
//! aggregation `$project` stage's own rules beyond these (`aggregate/mod.rs` reuses this).

mod apply;
mod raw;

use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::filter::{is_operator_document, truthy, ElemMatch, Filter};
use crate::query::projection::apply::{exclude, include_into, ApplyContext};
use crate::query::value::number::Number;
use bson::{Bson, Document};

/// What happens to one field of the projection tree.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Action {
    Include,
    Exclude,
    Computed(Expression),
    Slice {
        skip: Option<i64>,
        limit: i64,
    },
    ElemMatch(ElemMatch),
    /// `a.$`: the element at the position the query matched.
    Positional,
    Nested(Vec<(String, Action)>),
}

/// Whether a projection keeps listed fields or drops them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectionMode {
    /// Only listed (and computed) fields, plus `_id` unless excluded.
    Inclusion,
    /// Everything except listed fields.
    Exclusion,
}

/// A parsed projection.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    mode: ProjectionMode,
    fields: Vec<(String, Action)>,
    /// False when `_id: 0` was given.
    include_id: bool,
    empty: bool,
    /// A field is `{$meta: "textScore"}`.
    text_score: bool,
}

impl Projection {
    /// Parses a `find` projection (with `$slice`, `$elemMatch` and positional `a.$`).
    pub fn parse(spec: &Document) -> Result<Projection, QueryError> {
        Self::parse_with(spec, true)
    }

    /// Parses an aggregation `$project` specification: no find-only features (`$slice` is
    /// the expression), and an empty specification is an error.
    pub fn parse_aggregation(spec: &Document) -> Result<Projection, QueryError> {
        if spec.is_empty() {
            return Err(QueryError::location(
                51272,
                "projection specification must have at least one field",
            ));
        }
        Self::parse_with(spec, false)
    }

    fn parse_with(spec: &Document, find_features: bool) -> Result<Projection, QueryError> {
        let mut builder = Builder {
            mode: None,
            fields: Vec::new(),
            include_id: true,
            id_explicitly_included: false,
            find_features,
            has_find_slice: false,
            has_elem_match: false,
            has_positional: false,
            text_score: false,
        };
        for (path, value) in spec {
            builder.add(path, value)?;
        }
        // MongoDB's rules for projections that name no plain field (computeProjectionType).
        let mode = match builder.mode {
            Some(mode) => mode,
            None if builder.has_find_slice => {
                if builder.id_explicitly_included {
                    ProjectionMode::Inclusion
                } else {
                    ProjectionMode::Exclusion
                }
            }
            None if builder.has_elem_match || builder.id_explicitly_included => {
                ProjectionMode::Inclusion
            }
            None => ProjectionMode::Exclusion,
        };
        Ok(Projection {
            mode,
            fields: builder.fields,
            include_id: builder.include_id,
            empty: spec.is_empty(),
            text_score: builder.text_score,
        })
    }

    /// Whether a field is `{$meta: "textScore"}` (the read must leave each document's score).
    pub fn uses_text_score(&self) -> bool {
        self.text_score
    }

    /// The mode (an `_id`-only or `$slice`-only projection counts as exclusion).
    pub fn mode(&self) -> ProjectionMode {
        self.mode
    }

    /// Whether the projection keeps the whole document.
    pub fn is_identity(&self) -> bool {
        self.empty
    }

    /// Applies the projection to one document.
    pub fn apply(&self, doc: &Document) -> Result<Document, QueryError> {
        self.apply_at(doc, None)
    }

    /// Whether the projection uses the positional `a.$` form (and so needs the query).
    pub fn is_positional(&self) -> bool {
        fn any_positional(fields: &[(String, Action)]) -> bool {
            fields.iter().any(|(_, a)| match a {
                Action::Positional => true,
                Action::Nested(children) => any_positional(children),
                _ => false,
            })
        }
        any_positional(&self.fields)
    }

    /// Applies the projection, resolving a positional `a.$` with the array position at which
    /// `query` matched `doc` (see `filter/positional.rs`).
    pub fn apply_with_query(&self, doc: &Document, query: &Filter) -> Result<Document, QueryError> {
        let position = if self.is_positional() {
            crate::query::filter::positional::matched_array_position(query, doc)
        } else {
            None
        };
        self.apply_at(doc, position)
    }

    fn apply_at(&self, doc: &Document, position: Option<usize>) -> Result<Document, QueryError> {
        if self.empty {
            return Ok(doc.clone());
        }
        match self.mode {
            ProjectionMode::Inclusion => {
                let mut out = Document::new();
                if self.include_id {
                    if let Some(id) = doc.get("_id") {
                        out.insert("_id", id.clone());
                    }
                }
                let context = ApplyContext {
                    document: doc,
                    position,
                };
                include_into(doc, &self.fields, &context, &mut out)?;
                Ok(out)
            }
            ProjectionMode::Exclusion => {
                let mut out = exclude(doc, &self.fields);
                if !self.include_id {
                    out.remove("_id");
                }
                // `{$meta: ...}` fields are added whatever the mode.
                for (name, action) in &self.fields {
                    if let Action::Computed(expression) = action {
                        if let Some(value) = expression.evaluate_optional(doc)? {
                            out.insert(name.clone(), value);
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

struct Builder {
    mode: Option<ProjectionMode>,
    fields: Vec<(String, Action)>,
    include_id: bool,
    id_explicitly_included: bool,
    find_features: bool,
    has_find_slice: bool,
    has_elem_match: bool,
    has_positional: bool,
    text_score: bool,
}

impl Builder {
    fn set_mode(&mut self, path: &str, wanted: ProjectionMode) -> Result<(), QueryError> {
        match (self.mode, wanted) {
            (None, _) => self.mode = Some(wanted),
            (Some(ProjectionMode::Inclusion), ProjectionMode::Exclusion) => {
                return Err(QueryError::location(
                    31254,
                    format!("Cannot do exclusion on field {path} in inclusion projection"),
                ))
            }
            (Some(ProjectionMode::Exclusion), ProjectionMode::Inclusion) => {
                return Err(QueryError::location(
                    31253,
                    format!("Cannot do inclusion on field {path} in exclusion projection"),
                ))
            }
            _ => {}
        }
        Ok(())
    }

    fn add(&mut self, path: &str, value: &Bson) -> Result<(), QueryError> {
        if path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(QueryError::location(
                31248,
                "FieldPath field names may not be empty strings.",
            ));
        }
        if path.starts_with('$') {
            return Err(QueryError::location(
                16410,
                format!("FieldPath field names may not start with '$'. ({path})"),
            ));
        }
        let positional = path.ends_with(".$");
        if positional && !self.find_features {
            return Err(QueryError::location(
                31324,
                "Cannot use positional projection in aggregation projection",
            ));
        }
        if path.contains(".$.") {
            return Err(QueryError::location(
                31394,
                "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form like a.b.$.d, remove the parts following the '$' and the results will be equivalent.",
            ));
        }
        let action = match value {
            Bson::Document(_) if positional => {
                return Err(QueryError::location(
                    31271,
                    "positional projection cannot be used with an expression or sub object",
                ))
            }
            Bson::Document(d) if d.is_empty() => {
                return Err(QueryError::location(
                    51270,
                    format!("Invalid empty sub-projection: {path}"),
                ))
            }
            Bson::Document(d) if d.len() == 1 && is_operator_document(d) => {
                self.parse_operator_value(path, d, value)?
            }
            Bson::Document(d) => {
                for (sub, v) in d {
                    self.add(&format!("{path}.{sub}"), v)?;
                }
                return Ok(());
            }
            Bson::Boolean(_)
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::Double(_)
            | Bson::Decimal128(_) => {
                let include = truthy(value);
                if path == "_id" {
                    // A top-level `_id` flag never decides the mode while other fields do.
                    self.include_id = include;
                    self.id_explicitly_included = include;
                    return Ok(());
                }
                if include {
                    self.set_mode(path, ProjectionMode::Inclusion)?;
                    Action::Include
                } else if positional {
                    return Err(QueryError::location(
                        31395,
                        "positional projection cannot be used with exclusion",
                    ));
                } else {
                    self.set_mode(path, ProjectionMode::Exclusion)?;
                    Action::Exclude
                }
            }
            other if positional => {
                return Err(QueryError::location(
                    31308,
                    format!("positional projection cannot be used with a literal: {other}"),
                ))
            }
            other => {
                if self.mode == Some(ProjectionMode::Exclusion) {
                    return Err(QueryError::location(
                        31310,
                        format!(
                            "Cannot use an expression {path}: {other} in an exclusion projection"
                        ),
                    ));
                }
                self.mode = Some(ProjectionMode::Inclusion);
                Action::Computed(Expression::parse(other)?)
            }
        };
        if let Some(array_path) = path.strip_suffix(".$") {
            if self.has_positional {
                return Err(QueryError::location(
                    31276,
                    "Cannot specify more than one positional projection per query.",
                ));
            }
            if self.has_elem_match {
                return Err(QueryError::location(
                    31256,
                    "Cannot specify positional operator and $elemMatch.",
                ));
            }
            self.has_positional = true;
            let parts: Vec<&str> = array_path.split('.').collect();
            return insert(&mut self.fields, &parts, Action::Positional, path);
        }
        if path == "_id" {
            self.include_id = !matches!(action, Action::Computed(_));
        }
        let parts: Vec<&str> = path.split('.').collect();
        insert(&mut self.fields, &parts, action, path)
    }

    /// `{field: {$op: …}}`: find's `$slice` and `$elemMatch`, or an aggregation expression.
    fn parse_operator_value(
        &mut self,
        path: &str,
        d: &Document,
        value: &Bson,
    ) -> Result<Action, QueryError> {
        let name = d.keys().next().map(String::as_str).unwrap_or("");
        let argument = d.get(name).unwrap_or(&Bson::Null);
        if self.find_features && name == "$slice" {
            if let Ok(slice) = parse_slice(argument) {
                self.has_find_slice = true;
                return Ok(slice);
            }
        }
        if name == "$elemMatch" {
            if !self.find_features {
                return Err(QueryError::invalid_pipeline_operator(
                    "Cannot use $elemMatch in this context",
                ));
            }
            if !matches!(argument, Bson::Document(_)) {
                return Err(QueryError::location(
                    31274,
                    format!(
                        "elemMatch: Invalid argument, object required, but got {}",
                        crate::query::expr::ops::type_name(Some(argument))
                    ),
                ));
            }
            if self.has_positional {
                return Err(QueryError::location(
                    31255,
                    "Cannot specify positional operator and $elemMatch.",
                ));
            }
            if path.contains('.') {
                return Err(QueryError::location(
                    31275,
                    "Cannot use $elemMatch projection on a nested field.",
                ));
            }
            self.has_elem_match = true;
            return Ok(Action::ElemMatch(crate::query::filter::parse_elem_match(
                argument, 0,
            )?));
        }
        if name == "$meta" {
            // Only textScore is kept (the expression parser answers MongoDB's error for the
            // other kinds: 17308 unknown, …); it does not decide the projection's mode.
            let expression = Expression::parse(value)?;
            self.text_score = true;
            return Ok(Action::Computed(expression));
        }
        if self.mode == Some(ProjectionMode::Exclusion) {
            return Err(QueryError::location(
                31252,
                "Cannot use expression other than $meta in exclusion projection",
            ));
        }
        let expression = Expression::parse(value).map_err(|e| {
            if e.code == 168 && self.find_features {
                QueryError::location(31325, format!("Unknown expression {name}"))
            } else {
                e
            }
        })?;
        self.mode = Some(ProjectionMode::Inclusion);
        Ok(Action::Computed(expression))
    }
}

fn insert(
    fields: &mut Vec<(String, Action)>,
    parts: &[&str],
    action: Action,
    full: &str,
) -> Result<(), QueryError> {
    let Some((head, rest)) = parts.split_first() else {
        return Ok(());
    };
    let existing = fields.iter_mut().find(|(name, _)| name == head);
    match (existing, rest.is_empty()) {
        (None, true) => fields.push((head.to_string(), action)),
        (None, false) => {
            let mut children = Vec::new();
            insert(&mut children, rest, action, full)?;
            fields.push((head.to_string(), Action::Nested(children)));
        }
        (Some((_, Action::Nested(children))), false) => insert(children, rest, action, full)?,
        (Some(_), false) => {
            return Err(QueryError::location(
                31249,
                format!(
                    "Path collision at {full} remaining portion {}",
                    rest.join(".")
                ),
            ))
        }
        (Some(_), true) => {
            return Err(QueryError::location(
                31250,
                format!("Path collision at {full}"),
            ))
        }
    }
    Ok(())
}

fn parse_slice(arg: &Bson) -> Result<Action, QueryError> {
    let int =
        |v: &Bson| Number::from_bson(v).map(|n| n.to_exact_i64().unwrap_or(n.to_f64() as i64));
    match arg {
        Bson::Array(items) if items.len() == 2 => {
            let skip = int(&items[0]).ok_or_else(|| {
                QueryError::location(28724, "First argument to $slice must be an integer")
            })?;
            let limit = int(&items[1]).ok_or_else(|| {
                QueryError::location(28724, "Second argument to $slice must be an integer")
            })?;
            if limit <= 0 {
                return Err(QueryError::location(
                    28724,
                    "Second argument to $slice must be positive",
                ));
            }
            Ok(Action::Slice {
                skip: Some(skip),
                limit,
            })
        }
        other => match int(other) {
            Some(limit) => Ok(Action::Slice { skip: None, limit }),
            None => Err(QueryError::location(
                28667,
                "$slice only supports numbers and [skip, limit] arrays",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn project(spec: Document, d: Document) -> Document {
        Projection::parse(&spec).unwrap().apply(&d).unwrap()
    }

    #[test]
    fn inclusion_keeps_id_and_document_order() {
        let d = doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "e": 4};
        assert_eq!(
            project(doc! {"e": 1, "a": 1}, d.clone()),
            doc! {"_id": 1, "a": 1, "e": 4}
        );
        assert_eq!(
            project(doc! {"b.c": 1, "_id": 0}, d.clone()),
            doc! {"b": {"c": 2}}
        );
        assert_eq!(
            project(doc! {"b": {"d": 1}}, d.clone()),
            doc! {"_id": 1, "b": {"d": 3}}
        );
        assert_eq!(project(doc! {"_id": 1}, d.clone()), doc! {"_id": 1});
        assert_eq!(project(doc! {}, d.clone()), d);
    }

    #[test]
    fn exclusion_and_arrays_of_documents() {
        let d = doc! {"_id": 1, "a": [{"b": 1, "c": 2}, {"b": 3}, 5], "x": 1};
        assert_eq!(
            project(doc! {"a.b": 1}, d.clone()),
            doc! {"_id": 1, "a": [{"b": 1}, {"b": 3}]}
        );
        assert_eq!(
            project(doc! {"a.b": 0, "_id": 0}, d.clone()),
            doc! {"a": [{"c": 2}, {}, 5], "x": 1}
        );
        assert_eq!(
            project(doc! {"x": 0}, d),
            doc! {"_id": 1, "a": [{"b": 1, "c": 2}, {"b": 3}, 5]}
        );
    }

    #[test]
    fn mixing_is_an_error() {
        let e = Projection::parse(&doc! {"a": 1, "b": 0}).unwrap_err();
        assert_eq!(e.code, 31254);
        assert_eq!(
            e.message,
            "Cannot do exclusion on field b in inclusion projection"
        );
        let e = Projection::parse(&doc! {"a": 0, "b": 1}).unwrap_err();
        assert_eq!(e.code, 31253);
        assert!(Projection::parse(&doc! {"a": 1, "_id": 0}).is_ok());
        assert_eq!(
            Projection::parse(&doc! {"a": 1, "a.b": 1})
                .unwrap_err()
                .code,
            31249
        );
    }

    #[test]
    fn computed_slice_and_elem_match() {
        let d = doc! {"_id": 1, "a": {"b": 5}, "arr": [1, 2, 3, 4], "g": [{"s": 1}, {"s": 9}]};
        assert_eq!(
            project(
                doc! {"x": "$a.b", "y": {"$literal": 1}, "_id": 0},
                d.clone()
            ),
            doc! {"x": 5, "y": 1}
        );
        assert_eq!(
            project(doc! {"arr": {"$slice": -2}, "g": 0}, d.clone()),
            doc! {"_id": 1, "a": {"b": 5}, "arr": [3, 4]}
        );
        assert_eq!(
            project(
                doc! {"arr": {"$slice": [1, 2]}, "a": 0, "g": 0, "_id": 0},
                d.clone()
            ),
            doc! {"arr": [2, 3]}
        );
        assert_eq!(
            project(doc! {"g": {"$elemMatch": {"s": {"$gt": 5}}}}, d),
            doc! {"_id": 1, "g": [{"s": 9}]}
        );
    }

    #[test]
    fn positional_projection_uses_the_query() {
        let spec = Projection::parse(&doc! {"grades.$": 1}).unwrap();
        assert!(spec.is_positional());
        let query = Filter::parse(&doc! {"grades": {"$gte": 85}}).unwrap();
        let d = doc! {"_id": 1, "grades": [80, 87, 90], "x": 1};
        assert_eq!(
            spec.apply_with_query(&d, &query).unwrap(),
            doc! {"_id": 1, "grades": [87]}
        );
        assert_eq!(spec.apply(&d).unwrap_err().code, 51246);
        assert_eq!(
            Projection::parse(&doc! {"a.$.b": 1}).unwrap_err().code,
            31394
        );
    }

    /// MongoDB's classification rules (projection_parser.cpp).
    #[test]
    fn classification_rules() {
        let d = doc! {"_id": 1, "a": [1, 2, 3], "b": [{"x": 1}, {"x": 2}], "c": 3};
        // $slice alone: exclusion; with _id: 1, inclusion.
        assert_eq!(
            project(doc! {"a": {"$slice": 1}}, d.clone()),
            doc! {"_id": 1, "a": [1], "b": [{"x": 1}, {"x": 2}], "c": 3}
        );
        assert_eq!(
            project(doc! {"_id": 1, "a": {"$slice": 1}}, d.clone()),
            doc! {"_id": 1, "a": [1]}
        );
        // $elemMatch alone: inclusion; with an exclusion it stays an exclusion.
        assert_eq!(
            project(doc! {"b": {"$elemMatch": {"x": 2}}}, d.clone()),
            doc! {"_id": 1, "b": [{"x": 2}]}
        );
        assert_eq!(
            project(doc! {"c": 0, "b": {"$elemMatch": {"x": 2}}}, d.clone()),
            doc! {"_id": 1, "a": [1, 2, 3], "b": [{"x": 2}]}
        );
        // Literals are computed fields; expressions in exclusions are refused.
        assert_eq!(
            project(doc! {"n": null, "s": "lit", "_id": 0}, d.clone()),
            doc! {"n": null, "s": "lit"}
        );
        assert_eq!(
            Projection::parse(&doc! {"c": 0, "n": {"$literal": 1}})
                .unwrap_err()
                .code,
            31252
        );
        assert_eq!(
            Projection::parse(&doc! {"c": 0, "n": "x"})
                .unwrap_err()
                .code,
            31310
        );
        assert_eq!(
            Projection::parse(&doc! {"n": {"$nosuch": 1}})
                .unwrap_err()
                .code,
            31325
        );
        assert_eq!(Projection::parse(&doc! {"n": {}}).unwrap_err().code, 51270);
        // Aggregation: $slice is the expression, $elemMatch and positional are refused.
        let p = Projection::parse_aggregation(&doc! {"a": {"$slice": ["$a", 2]}}).unwrap();
        assert_eq!(p.apply(&d).unwrap(), doc! {"_id": 1, "a": [1, 2]});
        assert_eq!(
            Projection::parse_aggregation(&doc! {"b": {"$elemMatch": {"x": 1}}})
                .unwrap_err()
                .code,
            168
        );
        assert_eq!(
            Projection::parse_aggregation(&doc! {"b.$": 1})
                .unwrap_err()
                .code,
            31324
        );
        assert_eq!(
            Projection::parse_aggregation(&doc! {}).unwrap_err().code,
            51272
        );
    }
}
