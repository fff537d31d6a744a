//! `collMod`: redefines a view (`viewOn`, `pipeline`) or changes an index of a collection
//! (`index: {name | keyPattern, hidden, expireAfterSeconds, prepareUnique, unique}`, `dryRun`
//! for the unique conversion), with MongoDB's errors for
//! options that do not apply to what the namespace is ("option not supported on a view",
//! "option only supported on a view") and for the ones docgate does not honour yet (never
//! accepted and ignored). The changes run in the core (`ops::views::modify_view`,
//! `ops::coll_mod::modify_index`).
//!
//! The validation settings (`validator`, `validationLevel`, `validationAction`) are read in
//! one place, [`ValidationChange::take`], and applied by the validation core
//! (`ops::validation::set_validation_options`) with `create`'s checks.
//!
//! Not for: `create`'s options (`namespaces`), what a view or an index does (`ops`).

use bson::{Bson, Document};

use crate::mongo::arguments::Arguments;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops;
use crate::ops::coll_mod::{IndexChange, IndexSelector};
use crate::ops::views::is_view;
use crate::query::QueryError;

/// MongoDB's 72 InvalidOptions.
fn invalid_options(message: impl Into<String>) -> OpError {
    OpError::InvalidOptions(message.into())
}

fn not_on_a_view(option: &str) -> OpError {
    invalid_options(format!("option not supported on a view: {option}"))
}

fn only_on_a_view(option: &str) -> OpError {
    invalid_options(format!("option only supported on a view: {option}"))
}

/// `collMod`'s validation settings, as given.
#[derive(Debug, Default)]
pub struct ValidationChange {
    pub validator: Option<Document>,
    pub level: Option<Bson>,
    pub action: Option<Bson>,
}

impl ValidationChange {
    /// Takes `validator`, `validationLevel` and `validationAction` from the command.
    pub fn take(arguments: &mut Arguments<'_>) -> Result<ValidationChange, OpError> {
        Ok(ValidationChange {
            validator: arguments.document("validator")?.cloned(),
            level: arguments.value("validationLevel").cloned(),
            action: arguments.value("validationAction").cloned(),
        })
    }

    /// The first setting given, by its field name.
    fn first_given(&self) -> Option<&'static str> {
        if self.validator.is_some() {
            Some("validator")
        } else if self.level.is_some() {
            Some("validationLevel")
        } else if self.action.is_some() {
            Some("validationAction")
        } else {
            None
        }
    }
}

/// `collMod`'s `index` document, parsed.
struct IndexRequest {
    selector: IndexSelector,
    change: IndexChange,
    force_non_unique: Option<bool>,
}

impl IndexRequest {
    fn parse(index: &Document) -> Result<IndexRequest, OpError> {
        let mut fields = Arguments::new("collMod.index", index);
        let name = fields.str("name")?;
        let key_pattern = fields.document("keyPattern")?;
        let hidden = fields.bool("hidden")?;
        let expire_after_seconds = fields.i64("expireAfterSeconds")?;
        let unique = fields.bool("unique")?;
        let prepare_unique = fields.bool("prepareUnique")?;
        let force_non_unique = fields.bool("forceNonUnique")?;
        fields.finish()?;
        let selector = match (name, key_pattern) {
            (Some(_), Some(_)) => {
                return Err(invalid_options("Cannot specify both key pattern and name."))
            }
            (None, None) => {
                return Err(invalid_options(
                    "Must specify either index name or key pattern.",
                ))
            }
            (Some(name), None) => IndexSelector::Name(name.to_owned()),
            (None, Some(key)) => IndexSelector::KeyPattern(key.clone()),
        };
        if hidden.is_none()
            && expire_after_seconds.is_none()
            && unique.is_none()
            && prepare_unique.is_none()
            && force_non_unique.is_none()
        {
            return Err(invalid_options(
                "no expireAfterSeconds, hidden, unique, or prepareUnique field",
            ));
        }
        Ok(IndexRequest {
            selector,
            change: IndexChange {
                hidden,
                expire_after_seconds,
                prepare_unique,
                unique,
                dry_run: false,
            },
            force_non_unique,
        })
    }
}

/// `collMod`.
pub async fn coll_mod(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let name = request.collection()?;
    let mut arguments = request.arguments();
    let index = arguments.document("index")?;
    let validation = ValidationChange::take(&mut arguments)?;
    let view_on = match arguments.value("viewOn") {
        None => None,
        Some(Bson::String(view_on)) => Some(view_on.clone()),
        Some(_) => return Err(invalid_options("'viewOn' option must be a string")),
    };
    let pipeline: Option<Vec<Document>> = match arguments.value("pipeline") {
        None => None,
        Some(Bson::Array(stages)) => Some(
            stages
                .iter()
                .map(|stage| match stage {
                    Bson::Document(stage) => Ok(stage.clone()),
                    _ => Err(invalid_options(
                        "'pipeline' option must be an array of objects",
                    )),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => return Err(invalid_options("not a valid aggregation pipeline")),
    };
    let change_stream_images = arguments.document("changeStreamPreAndPostImages")?;
    let capped_size = arguments.value("cappedSize");
    let capped_max = arguments.value("cappedMax");
    let expire_after_seconds = arguments.value("expireAfterSeconds");
    let timeseries = arguments.value("timeseries");
    let dry_run = arguments.bool("dryRun")?.unwrap_or(false);
    let collection_uuid = arguments.value("collectionUUID");
    arguments.finish()?;
    let index = index.map(IndexRequest::parse).transpose()?;

    let Some(info) = context.collection_info(&request.db, name).await? else {
        return Err(OpError::NamespaceNotFound("ns does not exist".into()));
    };
    if let Some(uuid) = collection_uuid {
        let matches = matches!(uuid, Bson::Binary(binary) if binary.bytes == info.record.uuid);
        if !matches {
            return Err(OpError::Query(QueryError::coded(
                361,
                "CollectionUUIDMismatch",
                format!(
                    "Collection UUID {uuid} does not match that of the collection {}.{name}",
                    request.db
                ),
            )));
        }
    }
    let view = is_view(&info.record);
    if dry_run {
        let Some(index) = &index else {
            return Err(invalid_options(
                "dry run mode requires an valid index modification.",
            ));
        };
        if index.change.unique != Some(true) {
            return Err(invalid_options(
                "dry run mode requires an index modification with unique: true.",
            ));
        }
    }
    if capped_size.is_some() || capped_max.is_some() {
        if ops::capped::is_capped(&info.record) {
            return Err(OpError::NotSupported(
                "collMod cappedSize/cappedMax is not supported by docgate yet".into(),
            ));
        }
        return Err(invalid_options("Collection must be capped."));
    }
    if index.is_some() && view {
        return Err(not_on_a_view("index"));
    }
    if let Some(option) = validation.first_given() {
        if view {
            return Err(not_on_a_view(option));
        }
        // Checked before anything changes, so a bad setting leaves the index alone.
        ops::validation::validation_options(
            "collMod",
            &request.db,
            name,
            validation.validator.as_ref(),
            validation.level.as_ref(),
            validation.action.as_ref(),
        )?;
    }
    if pipeline.is_some() && !view {
        return Err(only_on_a_view("pipeline"));
    }
    if view_on.is_some() && !view {
        return Err(only_on_a_view("viewOn"));
    }
    if change_stream_images.is_some() {
        if view {
            return Err(not_on_a_view("changeStreamPreAndPostImages"));
        }
        return Err(OpError::NotSupported(
            "changeStreamPreAndPostImages is not supported by docgate: it has no change streams yet"
                .into(),
        ));
    }
    if expire_after_seconds.is_some() {
        if view {
            return Err(not_on_a_view("expireAfterSeconds"));
        }
        return Err(invalid_options(
            "'expireAfterSeconds' option is only supported on collections clustered by _id",
        ));
    }
    if timeseries.is_some() {
        return Err(invalid_options(
            "option only supported on a time-series collection: timeseries",
        ));
    }

    let state = &context.server.state;
    if view {
        if view_on.is_some() || pipeline.is_some() {
            ops::views::modify_view(state, &info.record, view_on, pipeline).await?;
        }
        return Ok(Document::new());
    }
    let Some(mut index) = index else {
        apply_validation(context, request, name, &validation).await?;
        return Ok(Document::new());
    };
    if index.force_non_unique == Some(false) {
        return Err(OpError::BadValue(
            "'forceNonUnique: false' is not supported".into(),
        ));
    }
    if index.change.unique == Some(false) {
        return Err(OpError::BadValue("Cannot make index non-unique".into()));
    }
    if index.change.unique == Some(true) && index.force_non_unique == Some(true) {
        return Err(invalid_options(
            "collMod does not support 'unique' and 'forceNonUnique' options at the same time",
        ));
    }
    if index.force_non_unique.is_some() {
        return Err(OpError::NotSupported(
            "collMod option 'index.forceNonUnique' is not supported by docgate yet".into(),
        ));
    }
    index.change.dry_run = dry_run;
    let reply = ops::coll_mod::modify_index(state, &info, &index.selector, &index.change).await?;
    if !dry_run {
        apply_validation(context, request, name, &validation).await?;
    }
    Ok(reply)
}

/// Replaces the collection's validation settings when the command gave any (after the
/// index change, which is the part that can be refused by the data).
async fn apply_validation(
    context: &CommandContext<'_>,
    request: &CommandRequest,
    name: &str,
    validation: &ValidationChange,
) -> Result<(), OpError> {
    if validation.first_given().is_none() {
        return Ok(());
    }
    ops::validation::set_validation_options(
        &context.server.state,
        &request.db,
        name,
        validation.validator.as_ref(),
        validation.level.as_ref(),
        validation.action.as_ref(),
    )
    .await
}
