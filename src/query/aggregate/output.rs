//! The stages that write a pipeline's result instead of returning it, `$out` and `$merge`:
//! their specs as MongoDB 7.0 parses them (with its error codes), where they may stand
//! (last, never inside `$facet`, `$lookup` or `$unionWith`), and what `$merge` does with one
//! result document and the target document it matches — pure functions the core applies
//! inside its write transaction.
//!
//! Not for: reading or writing collections, transactions, or the target's existence checks
//! (`ops::aggregate_writes`).

use bson::{Bson, Document};

use crate::query::error::QueryError;
use crate::query::expr::{parse_with_variables, visible_constants, Expression};
use crate::query::update::UpdateSpec;
use crate::query::value::path::get_path;

/// A parsed `$out` or `$merge`.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputStage {
    /// `$out`: replace the target collection with the result.
    Out(OutputNamespace),
    /// `$merge`: merge the result into the target collection.
    Merge(Box<MergeSpec>),
}

impl OutputStage {
    /// The stage's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            OutputStage::Out(_) => "$out",
            OutputStage::Merge(_) => "$merge",
        }
    }

    /// The collection written.
    pub fn target(&self) -> &OutputNamespace {
        match self {
            OutputStage::Out(target) => target,
            OutputStage::Merge(spec) => &spec.into,
        }
    }
}

/// The collection an output stage writes: in the aggregation's database unless `db` is given.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputNamespace {
    pub db: Option<String>,
    pub coll: String,
}

impl OutputNamespace {
    /// The target's database, given the aggregation's.
    pub fn db_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.db.as_deref().unwrap_or(default)
    }
}

/// What `$merge` does with a result document that matches a target document.
#[derive(Clone, Debug, PartialEq)]
pub enum WhenMatched {
    Replace,
    KeepExisting,
    Merge,
    Fail,
    /// An update pipeline applied to the target document, with `$$new` and `let` variables.
    Pipeline(Vec<Document>),
}

/// What `$merge` does with a result document that matches nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenNotMatched {
    Insert,
    Discard,
    Fail,
}

/// A parsed `$merge`.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeSpec {
    pub into: OutputNamespace,
    /// The `on` fields (`["_id"]` by default).
    pub on: Vec<String>,
    /// The `let` variables, evaluated against each result document (`None`: `$$new` only).
    pub variables: Option<Vec<(String, Expression)>>,
    /// The command's `let` variables where the stage was parsed: the `whenMatched` pipeline,
    /// parsed again per result document, sees them too.
    pub command_variables: Vec<(String, Bson)>,
    pub when_matched: WhenMatched,
    pub when_not_matched: WhenNotMatched,
}

/// What `$merge` does to the target for one matched result document.
#[derive(Clone, Debug, PartialEq)]
pub enum MatchedWrite {
    /// Leave the target document as it is.
    Keep,
    /// Write this document in its place (same `_id`).
    Write(Document),
    /// `whenMatched: fail`: the merge fails with a duplicate key error.
    Fail,
}

/// Parses `$out` (a collection name, or `{db, coll}`).
pub fn parse_out(spec: &Bson) -> Result<OutputStage, QueryError> {
    let target = match spec {
        Bson::String(coll) => OutputNamespace {
            db: None,
            coll: coll.clone(),
        },
        Bson::Document(d) => {
            for key in d.keys() {
                if key == "timeseries" {
                    return Err(QueryError::not_supported(
                        "$out into a time series collection is not supported by docgate",
                    ));
                }
                if key != "db" && key != "coll" {
                    return Err(QueryError::location(
                        40415,
                        format!("BSON field '$out.{key}' is an unknown field."),
                    ));
                }
            }
            OutputNamespace {
                db: Some(required_string(d, "db", "$out")?),
                coll: required_string(d, "coll", "$out")?,
            }
        }
        other => {
            return Err(QueryError::location(
                16990,
                format!(
                    "$out only supports a string or object argument, not {}",
                    type_name(other)
                ),
            ))
        }
    };
    check_target_name(&target, "$out")?;
    Ok(OutputStage::Out(target))
}

/// Parses `$merge` (a collection name, or `{into, on, let, whenMatched, whenNotMatched}`).
pub fn parse_merge(spec: &Bson) -> Result<OutputStage, QueryError> {
    let spec = match spec {
        Bson::String(coll) => {
            Document::from_iter([("into".to_string(), Bson::String(coll.clone()))])
        }
        Bson::Document(d) => d.clone(),
        other => {
            return Err(QueryError::type_mismatch(format!(
                "$merge requires a string or object argument, but found {}",
                type_name(other)
            )))
        }
    };
    for key in spec.keys() {
        if !matches!(
            key.as_str(),
            "into" | "on" | "let" | "whenMatched" | "whenNotMatched"
        ) {
            return Err(QueryError::location(
                40415,
                format!("BSON field '$merge.{key}' is an unknown field."),
            ));
        }
    }
    let into = match spec.get("into") {
        Some(Bson::String(coll)) => OutputNamespace {
            db: None,
            coll: coll.clone(),
        },
        Some(Bson::Document(d)) => {
            for key in d.keys() {
                if key != "db" && key != "coll" {
                    return Err(QueryError::location(
                        40415,
                        format!("BSON field 'into.{key}' is an unknown field."),
                    ));
                }
            }
            let coll = match d.get("coll") {
                Some(Bson::String(coll)) if !coll.is_empty() => coll.clone(),
                _ => {
                    return Err(QueryError::location(
                        51178,
                        "$merge 'into' field must specify a 'coll' that is not empty, null or undefined",
                    ))
                }
            };
            let db = match d.get("db") {
                None | Some(Bson::Null) => None,
                Some(Bson::String(db)) => Some(db.clone()),
                Some(other) => {
                    return Err(QueryError::type_mismatch(format!(
                        "BSON field 'into.db' is the wrong type '{}', expected type 'string'",
                        type_name(other)
                    )))
                }
            };
            OutputNamespace { db, coll }
        }
        None => {
            return Err(QueryError::location(
                40414,
                "BSON field '$merge.into' is missing but a required field",
            ))
        }
        Some(other) => {
            return Err(QueryError::location(
                51178,
                format!(
                    "$merge 'into' field  must be either a string or an object, but found {}",
                    type_name(other)
                ),
            ))
        }
    };
    check_target_name(&into, "$merge")?;
    let on = parse_on(spec.get("on"))?;
    let when_matched = match spec.get("whenMatched") {
        None => WhenMatched::Merge,
        Some(Bson::String(mode)) => match mode.as_str() {
            "replace" => WhenMatched::Replace,
            "keepExisting" => WhenMatched::KeepExisting,
            "merge" => WhenMatched::Merge,
            "fail" => WhenMatched::Fail,
            other => {
                return Err(QueryError::bad_value(format!(
                    "Enumeration value '{other}' for field 'whenMatched' is not a valid value."
                )))
            }
        },
        Some(Bson::Array(stages)) => {
            let stages = stages
                .iter()
                .map(|stage| match stage {
                    Bson::Document(d) => Ok(d.clone()),
                    _ => Err(QueryError::type_mismatch(
                        "Each element of the 'whenMatched' pipeline must be an object",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            WhenMatched::Pipeline(stages)
        }
        Some(other) => {
            return Err(QueryError::location(
                51191,
                format!(
                    "$merge 'whenMatched' field  must be either a string or an array, but found {}",
                    type_name(other)
                ),
            ))
        }
    };
    let when_not_matched = match spec.get("whenNotMatched") {
        None => WhenNotMatched::Insert,
        Some(Bson::String(mode)) => match mode.as_str() {
            "insert" => WhenNotMatched::Insert,
            "discard" => WhenNotMatched::Discard,
            "fail" => WhenNotMatched::Fail,
            other => {
                return Err(QueryError::bad_value(format!(
                    "Enumeration value '{other}' for field 'whenNotMatched' is not a valid value."
                )))
            }
        },
        Some(other) => {
            return Err(QueryError::type_mismatch(format!(
                "BSON field '$merge.whenNotMatched' is the wrong type '{}', expected type 'string'",
                type_name(other)
            )))
        }
    };
    // MongoDB has no strategy for these four pairs (they would write nothing or only fail).
    if matches!(when_matched, WhenMatched::KeepExisting | WhenMatched::Fail)
        && when_not_matched != WhenNotMatched::Insert
    {
        return Err(QueryError::location(
            51181,
            format!(
                "Combination of $merge modes 'whenMatched: {}' and 'whenNotMatched: {}' is not supported",
                mode_name(&when_matched),
                match when_not_matched {
                    WhenNotMatched::Insert => "insert",
                    WhenNotMatched::Discard => "discard",
                    WhenNotMatched::Fail => "fail",
                }
            ),
        ));
    }
    let variables = match spec.get("let") {
        None | Some(Bson::Null) => None,
        Some(Bson::Document(vars)) => {
            if let WhenMatched::Pipeline(_) = when_matched {
            } else {
                return Err(QueryError::location(
                    51199,
                    format!(
                        "Cannot use 'let' variables with 'whenMatched: {}' mode",
                        mode_name(&when_matched)
                    ),
                ));
            }
            if vars
                .get("new")
                .is_some_and(|new| new != &Bson::String("$$ROOT".into()))
            {
                return Err(QueryError::location(
                    51273,
                    "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'",
                ));
            }
            let mut bound = Vec::with_capacity(vars.len());
            for (name, value) in vars {
                check_variable_name(name)?;
                bound.push((name.clone(), Expression::parse(value)?));
            }
            Some(bound)
        }
        Some(other) => {
            return Err(QueryError::type_mismatch(format!(
                "BSON field '$merge.let' is the wrong type '{}', expected type 'object'",
                type_name(other)
            )))
        }
    };
    let spec = MergeSpec {
        command_variables: visible_constants(),
        into,
        on,
        variables,
        when_matched,
        when_not_matched,
    };
    if let WhenMatched::Pipeline(stages) = &spec.when_matched {
        let binds_new = spec.variable_names().iter().any(|name| name == "new");
        if !binds_new
            && stages
                .iter()
                .any(|stage| mentions_new(&Bson::Document(stage.clone())))
        {
            return Err(QueryError::location(
                17276,
                "Use of undefined variable: new",
            ));
        }
        // The update pipeline must parse, with every variable in place.
        let placeholders: Vec<(String, Bson)> = spec
            .variable_names()
            .into_iter()
            .map(|name| (name, Bson::Null))
            .collect();
        parse_with_variables(&placeholders, || UpdateSpec::parse_pipeline(stages))?;
    }
    Ok(OutputStage::Merge(Box::new(spec)))
}

fn parse_on(on: Option<&Bson>) -> Result<Vec<String>, QueryError> {
    let fields = match on {
        None => return Ok(vec!["_id".to_string()]),
        Some(Bson::String(field)) => vec![field.clone()],
        Some(Bson::Array(items)) => {
            let mut fields = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Bson::String(field) => fields.push(field.clone()),
                    other => {
                        return Err(QueryError::location(
                            51134,
                            format!(
                                "$merge 'on' array elements must be strings, but found {}",
                                type_name(other)
                            ),
                        ))
                    }
                }
            }
            if fields.is_empty() {
                return Err(QueryError::location(
                    51187,
                    "If explicitly specifying $merge 'on', must include at least one field",
                ));
            }
            fields
        }
        Some(other) => {
            return Err(QueryError::location(
                51186,
                format!(
                "$merge 'on' field  must be either a string or an array of strings, but found {}",
                type_name(other)
            ),
            ))
        }
    };
    for (position, field) in fields.iter().enumerate() {
        if fields[..position].contains(field) {
            return Err(QueryError::location(
                31465,
                format!("Found a duplicate field '{field}'"),
            ));
        }
    }
    Ok(fields)
}

impl MergeSpec {
    /// Whether `on` is the default `_id`, which needs no other unique index.
    pub fn on_is_id(&self) -> bool {
        self.on.len() == 1 && self.on[0] == "_id"
    }

    /// The names the `whenMatched` pipeline may use as `$$name`.
    fn variable_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .variables
            .iter()
            .flatten()
            .map(|(name, _)| name.clone())
            .collect();
        if self.binds_new() && !names.iter().any(|name| name == "new") {
            names.push("new".to_string());
        }
        names
    }

    /// Whether `$$new` (the result document) is defined in the `whenMatched` pipeline
    /// without `let` naming it: by default, or with `let` when the merge inserts unmatched
    /// results (MongoDB adds it then).
    fn binds_new(&self) -> bool {
        self.variables.is_none() || self.when_not_matched == WhenNotMatched::Insert
    }

    /// The filter that finds the target document `result` matches: equality on every `on`
    /// field. A result without `_id` gets a new ObjectId first when `_id` is an `on` field
    /// (MongoDB adds it; it matches nothing). Other `on` fields must be present, not null,
    /// not undefined and not arrays (51132, 51185).
    pub fn match_filter(&self, result: &mut Document) -> Result<Document, QueryError> {
        if self.on.iter().any(|f| f == "_id") && !result.contains_key("_id") {
            let mut with_id = Document::new();
            with_id.insert("_id", bson::oid::ObjectId::new());
            with_id.extend(std::mem::take(result));
            *result = with_id;
        }
        let mut filter = Document::new();
        for field in &self.on {
            match get_path(result, field) {
                None | Some(Bson::Null | Bson::Undefined) => return Err(QueryError::location(
                    51132,
                    "$merge write error: 'on' field cannot be missing, null, undefined or an array",
                )),
                Some(Bson::Array(_)) => return Err(QueryError::location(
                    51185,
                    "$merge write error: 'on' field cannot be missing, null, undefined or an array",
                )),
                Some(value) => {
                    filter.insert(field.clone(), bson::doc! {"$eq": value.clone()});
                }
            }
        }
        Ok(filter)
    }

    /// What `whenMatched` writes for `result` over the matched `existing` document. The
    /// `_id` stays the existing one; a result carrying another `_id` is MongoDB's 66
    /// ImmutableField.
    pub fn matched_write(
        &self,
        existing: &Document,
        result: &Document,
    ) -> Result<MatchedWrite, QueryError> {
        let written = match &self.when_matched {
            WhenMatched::KeepExisting => return Ok(MatchedWrite::Keep),
            WhenMatched::Fail => return Ok(MatchedWrite::Fail),
            WhenMatched::Replace => {
                let mut replaced = Document::new();
                if let Some(id) = existing.get("_id") {
                    replaced.insert("_id", id.clone());
                }
                for (key, value) in result {
                    if key != "_id" {
                        replaced.insert(key.clone(), value.clone());
                    }
                }
                check_same_id(existing, result)?;
                replaced
            }
            WhenMatched::Merge => {
                check_same_id(existing, result)?;
                let mut merged = existing.clone();
                for (key, value) in result {
                    if key != "_id" {
                        merged.insert(key.clone(), value.clone());
                    }
                }
                merged
            }
            WhenMatched::Pipeline(stages) => {
                let mut bound = self.command_variables.clone();
                match &self.variables {
                    None => bound.push(("new".to_string(), Bson::Document(result.clone()))),
                    Some(variables) => {
                        for (name, expression) in variables {
                            bound.push((name.clone(), expression.evaluate(result)?));
                        }
                        if self.binds_new() && !bound.iter().any(|(name, _)| name == "new") {
                            bound.push(("new".to_string(), Bson::Document(result.clone())));
                        }
                    }
                }
                let update = parse_with_variables(&bound, || UpdateSpec::parse_pipeline(stages))?;
                let mut updated = existing.clone();
                update.apply(&mut updated).map_err(|error| {
                    if error.code == 66 {
                        immutable_id()
                    } else {
                        error
                    }
                })?;
                updated
            }
        };
        Ok(MatchedWrite::Write(written))
    }
}

/// Whether `value` refers to `$$new` (or a path under it) anywhere.
fn mentions_new(value: &Bson) -> bool {
    match value {
        Bson::String(s) => s == "$$new" || s.starts_with("$$new."),
        Bson::Document(d) => d.values().any(mentions_new),
        Bson::Array(items) => items.iter().any(mentions_new),
        _ => false,
    }
}

fn check_same_id(existing: &Document, result: &Document) -> Result<(), QueryError> {
    match (existing.get("_id"), result.get("_id")) {
        (Some(old), Some(new))
            if crate::query::value::compare::compare_values(old, new)
                != std::cmp::Ordering::Equal =>
        {
            Err(immutable_id())
        }
        _ => Ok(()),
    }
}

fn immutable_id() -> QueryError {
    QueryError::immutable_field(
        "$merge failed to update the matching document, did you attempt to modify the _id or the shard key? :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'",
    )
}

fn mode_name(mode: &WhenMatched) -> &'static str {
    match mode {
        WhenMatched::Replace => "replace",
        WhenMatched::KeepExisting => "keepExisting",
        WhenMatched::Merge => "merge",
        WhenMatched::Fail => "fail",
        WhenMatched::Pipeline(_) => "pipeline",
    }
}

fn check_variable_name(name: &str) -> Result<(), QueryError> {
    let valid_first = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii());
    let valid_rest = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii());
    if !valid_first || !valid_rest {
        return Err(QueryError::failed_to_parse(format!(
            "'{name}' starts with an invalid character for a user variable name"
        )));
    }
    Ok(())
}

fn required_string(d: &Document, field: &str, stage: &str) -> Result<String, QueryError> {
    match d.get(field) {
        Some(Bson::String(s)) => Ok(s.clone()),
        None => Err(QueryError::location(
            40414,
            format!("BSON field '{stage}.{field}' is missing but a required field"),
        )),
        Some(other) => Err(QueryError::type_mismatch(format!(
            "BSON field '{stage}.{field}' is the wrong type '{}', expected type 'string'",
            type_name(other)
        ))),
    }
}

/// An empty or otherwise invalid target name is MongoDB's InvalidNamespace.
fn check_target_name(target: &OutputNamespace, stage: &str) -> Result<(), QueryError> {
    let bad_db = target
        .db
        .as_deref()
        .is_some_and(|db| db.is_empty() || db.contains(['/', '\\', '.', ' ', '"', '$', '\0']));
    if target.coll.is_empty() || target.coll.contains(['$', '\0']) || bad_db {
        let ns = format!("{}.{}", target.db.as_deref().unwrap_or(""), target.coll);
        return Err(QueryError::coded(
            73,
            "InvalidNamespace",
            format!("Invalid {stage} target namespace, '{ns}'"),
        ));
    }
    Ok(())
}

fn type_name(value: &Bson) -> &'static str {
    crate::query::expr::ops::type_name(Some(value))
}

/// Refuses `$out`/`$merge` inside the sub-pipelines of `$facet` (40600), `$lookup` (51047)
/// and `$unionWith` (31441) among `stages`, as MongoDB does.
pub fn check_not_nested(stages: &[Document]) -> Result<(), QueryError> {
    for stage in stages {
        let Some((name, spec)) = stage.iter().next() else {
            continue;
        };
        let mut sub_pipelines: Vec<&Bson> = Vec::new();
        match (name.as_str(), spec) {
            ("$facet", Bson::Document(facets)) => sub_pipelines.extend(facets.values()),
            ("$lookup" | "$unionWith", Bson::Document(d)) => {
                sub_pipelines.extend(d.get("pipeline"))
            }
            _ => {}
        }
        for pipeline in sub_pipelines {
            let Bson::Array(inner) = pipeline else {
                continue;
            };
            for inner_stage in inner.iter().filter_map(Bson::as_document) {
                let Some(inner_name) = inner_stage.keys().next() else {
                    continue;
                };
                if inner_name != "$out" && inner_name != "$merge" {
                    continue;
                }
                let (code, message) = match name.as_str() {
                    "$facet" => (
                        40600,
                        format!("{inner_name} is not allowed to be used within a $facet stage"),
                    ),
                    "$lookup" => (
                        51047,
                        format!("{inner_name} is not allowed within a $lookup's sub-pipeline"),
                    ),
                    _ => (
                        31441,
                        format!("{inner_name} is not allowed within a $unionWith's sub-pipeline"),
                    ),
                };
                return Err(QueryError::location(code, message));
            }
        }
    }
    Ok(())
}
