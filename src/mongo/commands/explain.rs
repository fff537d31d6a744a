//! `explain` (and therefore `find().explain()`, `aggregate(..., {explain: true})` and
//! mongosh's `.explain()`): how docgate would run a `find`, `count`, `distinct`,
//! `aggregate`, `update`, `delete` or `findAndModify` — MongoDB's `queryPlanner` shape, with
//! `IXSCAN`/`FETCH` or `COLLSCAN` stages naming the index used, and docgate's own details:
//! the backend, the backend's plan for the SQL that runs (SQLite's `EXPLAIN QUERY PLAN`,
//! PostgreSQL's `EXPLAIN`) and the residual filter Rust re-checks. With verbosity
//! `executionStats` or `allPlansExecution` the read is also run and counted.
//!
//! Not for: running the explained command's writes (an explained update writes nothing).

use std::time::Instant;

use bson::{doc, Bson, Document};

use super::find::FindArguments;
use crate::catalog::CollectionInfo;
use crate::mongo::command_table::{self, Command};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_array, opt_document, CommandRequest};
use crate::ops::aggregate_pushdown::PushedStage;
use crate::ops::find::hinted_indexes;
use crate::query::planner::ReadPlan;
use crate::query::SortSpec;
use crate::query::{parse_with_variables, Collation, Filter};
use crate::query::{Pipeline, Stage};
use crate::store::Predicate;

/// `explain`.
pub async fn explain(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let verbosity = arguments.str("verbosity")?.unwrap_or("allPlansExecution");
    arguments.finish()?;
    let Bson::Document(inner) = request.target() else {
        return Err(OpError::TypeMismatch(
            "explain takes a command document".into(),
        ));
    };
    if !matches!(
        verbosity,
        "queryPlanner" | "executionStats" | "allPlansExecution"
    ) {
        return Err(OpError::BadValue(format!(
            "unrecognized verbosity value: {verbosity}"
        )));
    }
    let mut inner_body = inner.clone();
    inner_body.insert("$db", request.db.clone());
    let mut inner_request = CommandRequest {
        name: inner.keys().next().cloned().unwrap_or_default(),
        db: request.db.clone(),
        body: inner_body,
    };
    // A read of a view is explained as the aggregate it runs on the collection it reads.
    if let Ok(name) = inner_request.collection() {
        if let Some((_, resolved)) = super::views::view_of(context, &request.db, name).await? {
            inner_request = super::views::explained_on_base(&inner_request, &resolved)?;
        }
    }
    let mut explained = inner_request.body.clone();
    explained.remove("$db");
    let inner = &explained;
    // The explained command's `let` variables, in scope of its filter and pipeline.
    let variables = match inner.get("let") {
        None => Vec::new(),
        Some(Bson::Document(variables)) => crate::query::bind_variables(variables)?,
        Some(_) => {
            return Err(OpError::TypeMismatch(
                "BSON field 'let' is the wrong type, expected type 'object'".into(),
            ))
        }
    };
    let target = parse_with_variables(&variables, || explained_read(&inner_request))?;
    if inner_request.name == "aggregate" && !matches!(inner_request.target(), Bson::String(_)) {
        // `aggregate: 1` reads no collection: its input is the queued data of its first stage.
        return Ok(doc! {
            "explainVersion": "1",
            "queryPlanner": {
                "namespace": format!("{}.$cmd.aggregate", request.db),
                "winningPlan": {"stage": "QUEUED_DATA"},
                "rejectedPlans": [],
            },
            "command": inner.clone(),
        });
    }
    let name = inner_request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let info = context.collection_info(&request.db, name).await?;
    let mut reply = doc! {"explainVersion": "1"};
    let Some(info) = info else {
        reply.insert(
            "queryPlanner",
            doc! {
                "namespace": &namespace,
                "parsedQuery": target.filter_document.clone(),
                "winningPlan": {"stage": "EOF"},
                "rejectedPlans": [],
            },
        );
        reply.insert("command", inner.clone());
        return Ok(reply);
    };
    let indexes = hinted_indexes(&info.indexes, target.hint.as_ref())?;
    let filter = parse_with_variables(&variables, || Filter::parse(&target.filter_document))?;
    // How an aggregate's stages after its read run: in SQL, streamed, chained, held.
    let execution = match &target.pipeline {
        Some(pipeline) => Bson::Document(crate::ops::aggregate::execution(
            &info,
            pipeline,
            target.hint.as_ref(),
            target.collation.as_ref(),
            context.server.state.store.group_in_statement(),
        )?),
        None => Bson::Null,
    };
    let collation = info.collation_for(target.collation)?;
    let plan = ReadPlan::collated(
        filter,
        target.sort,
        target.skip,
        target.limit,
        indexes,
        collation,
    );
    // The stage after an aggregate's leading read that the store runs in the same statement
    // (a `$group` only under the simple collation, as `ops::aggregate` pushes it).
    let group_in = context.server.state.store.group_in_statement();
    let projects = context.server.state.store.projects_in_statement();
    let pushed = target
        .pipeline_rest
        .as_ref()
        .and_then(|rest| match rest.stages.as_slice() {
            _ if PushedStage::of(&plan, rest, group_in).is_some() => match rest.stages.first() {
                Some(Stage::Group { .. }) => Some("$group"),
                Some(Stage::Count(_)) => Some("$count"),
                _ => None,
            },
            // A `$project` of plain fields alone after an exact read the store orders: the
            // cursor has the store project each row in its statement (`ops::read_cursor`).
            [Stage::Project(projection)]
                if projects
                    && projection.store_spec().is_some()
                    && plan.residual.is_none()
                    && plan.sort.is_none()
                    && !plan.text_score =>
            {
                Some("$project")
            }
            _ => None,
        });
    let mut session = context.open_session().await?;
    let backend_plan = session.explain(&info.record, &plan.scan).await?;
    let mut winning = describe_plan(&plan, &info);
    winning.insert("docgate", doc! {
        "backend": context.server.state.store.backend_name(),
        "pushedFilterExact": plan.residual.is_none(),
        "pushedSort": plan.scan.order.is_some(),
        "pushedSkip": plan.scan.skip as i64,
        "pushedLimit": plan.scan.limit.map(|l| Bson::Int64(l as i64)).unwrap_or(Bson::Null),
        "residualFilter": if plan.residual.is_some() { Bson::Document(target.filter_document.clone()) } else { Bson::Null },
        "inMemorySort": plan.sort.is_some(),
        "stagesInSql": stages_in_sql(target.pipeline_stages.as_deref(), &plan, pushed),
        "pipeline": execution,
        "sqlPlan": backend_plan,
    });
    reply.insert(
        "queryPlanner",
        doc! {
            "namespace": &namespace,
            "parsedQuery": target.filter_document.clone(),
            "indexFilterSet": false,
            "winningPlan": winning,
            "rejectedPlans": [],
        },
    );
    if verbosity != "queryPlanner" {
        let started = Instant::now();
        // Under the explained command's memory limit: a sort past it spills (`usedDisk`), or
        // answers 292 with `allowDiskUse: false`.
        let allow_disk_use = inner_request.body.get_bool("allowDiskUse").ok();
        let memory = context.server.limits.blocking_memory(allow_disk_use);
        crate::compute::current_interrupt().limit_blocking_memory(memory.clone());
        drop(session);
        let mut stages = describe_plan(&plan, &info);
        let by_index = uses_index(&plan.scan.filter) || plan.scan.order_index.is_some();
        // Run as a find would run it: streamed and counted, never held whole.
        let counts = crate::ops::find::run_to_end(&mut context.scope(), &info, plan).await?;
        mark_sort_stage(&mut stages, counts.used_disk, memory.bytes);
        reply.insert(
            "executionStats",
            doc! {
                "executionSuccess": true,
                "nReturned": counts.returned as i64,
                "executionTimeMillis": started.elapsed().as_millis() as i64,
                "totalDocsExamined": counts.examined as i64,
                "totalKeysExamined": if by_index { counts.examined as i64 } else { 0 },
                "executionStages": stages,
            },
        );
    }
    reply.insert("command", inner.clone());
    reply.insert(
        "serverInfo",
        doc! {"host": "docgate", "version": crate::mongo::limits::MONGODB_VERSION},
    );
    Ok(reply)
}

/// For an aggregate, which of its leading stages the SQL runs: the `$match` when pushed
/// exactly, the `$sort` when the store produces the order, `$skip`/`$limit` when they went
/// into SQL, then `pushed`, the stage after them the store runs in the same statement
/// (`ops::aggregate_pushdown`). (Anything else ran in Rust, over the rows the read returned.)
fn stages_in_sql(stages: Option<&[Document]>, plan: &ReadPlan, pushed: Option<&str>) -> Bson {
    let Some(stages) = stages else {
        return Bson::Null;
    };
    let in_sql = |name: &str| match name {
        "$match" => plan.residual.is_none(),
        "$sort" => plan.scan.order.is_some() && plan.sort.is_none(),
        // Nothing left to skip or limit in Rust: SQL did it.
        "$skip" => plan.skip == 0,
        "$limit" => plan.limit.is_none(),
        _ => false,
    };
    Bson::Array(
        stages
            .iter()
            .filter_map(|stage| stage.keys().next())
            .filter(|name| in_sql(name))
            .map(|name| Bson::String(name.clone()))
            .chain(pushed.map(|name| Bson::String(name.into())))
            .collect(),
    )
}

/// What an explained command reads.
struct ExplainedRead {
    filter_document: Document,
    sort: Option<SortSpec>,
    skip: u64,
    limit: Option<u64>,
    hint: Option<Bson>,
    /// For an aggregate: the leading stages that this read stands for.
    pipeline_stages: Option<Vec<Document>>,
    /// For an aggregate: the stages after them.
    pipeline_rest: Option<Pipeline>,
    /// For an aggregate: its whole pipeline.
    pipeline: Option<Pipeline>,
    /// The command's (or its first statement's) own collation.
    collation: Option<Collation>,
}

/// The `collation` of a command body or statement, parsed.
fn collation_of(body: &Document) -> Result<Option<Collation>, OpError> {
    opt_document(body, "collation")?
        .map(Collation::parse)
        .transpose()
        .map_err(OpError::from)
}

fn explained_read(request: &CommandRequest) -> Result<ExplainedRead, OpError> {
    let body = &request.body;
    let filter_of = |field: &str| -> Result<Document, OpError> {
        Ok(opt_document(body, field)?.cloned().unwrap_or_default())
    };
    let first_statement = |field: &str| -> Result<Document, OpError> {
        match opt_array(body, field)?.and_then(|a| a.first()) {
            Some(Bson::Document(statement)) => Ok(statement.clone()),
            _ => Err(OpError::FailedToParse(format!(
                "explain of {} needs at least one statement",
                request.name
            ))),
        }
    };
    match command_table::lookup(&request.name).map(|spec| spec.command) {
        Some(Command::Find) => {
            let arguments = FindArguments::parse(request)?;
            Ok(ExplainedRead {
                filter_document: filter_of("filter")?,
                sort: arguments.sort,
                skip: arguments.skip,
                limit: arguments.limit,
                hint: arguments.hint,
                pipeline_stages: None,
                pipeline_rest: None,
                pipeline: None,
                collation: arguments.collation,
            })
        }
        Some(Command::Count | Command::Distinct) => Ok(ExplainedRead {
            filter_document: filter_of("query")?,
            sort: None,
            skip: 0,
            limit: None,
            hint: body.get("hint").cloned(),
            pipeline_stages: None,
            pipeline_rest: None,
            pipeline: None,
            collation: collation_of(body)?,
        }),
        Some(Command::Aggregate) => {
            let stages: Vec<Document> = opt_array(body, "pipeline")?
                .map(|stages| {
                    stages
                        .iter()
                        .filter_map(|s| s.as_document().cloned())
                        .collect()
                })
                .unwrap_or_default();
            let pipeline = Pipeline::parse(&stages)?;
            match request.target() {
                Bson::String(_) => crate::ops::aggregate::check_collection_input(&pipeline)?,
                _ => crate::ops::aggregate::check_collectionless_start(&pipeline, &stages)?,
            }
            let lead = pipeline.leading_read();
            Ok(ExplainedRead {
                filter_document: pipeline.leading_match().unwrap_or_default(),
                sort: lead.sort,
                skip: lead.skip,
                limit: lead.limit,
                hint: body.get("hint").cloned(),
                pipeline_stages: Some(stages[..lead.stages].to_vec()),
                pipeline_rest: Some(pipeline.after(lead.stages)),
                pipeline: Some(pipeline),
                collation: collation_of(body)?,
            })
        }
        Some(Command::Update) => {
            let statement = first_statement("updates")?;
            let multi = statement.get_bool("multi").unwrap_or(false);
            Ok(ExplainedRead {
                filter_document: opt_document(&statement, "q")?.cloned().unwrap_or_default(),
                sort: None,
                skip: 0,
                limit: (!multi).then_some(1),
                hint: statement.get("hint").cloned(),
                pipeline_stages: None,
                pipeline_rest: None,
                pipeline: None,
                collation: collation_of(&statement)?,
            })
        }
        Some(Command::Delete) => {
            let statement = first_statement("deletes")?;
            let one = matches!(
                statement.get("limit"),
                Some(Bson::Int32(1) | Bson::Int64(1))
            );
            Ok(ExplainedRead {
                filter_document: opt_document(&statement, "q")?.cloned().unwrap_or_default(),
                sort: None,
                skip: 0,
                limit: one.then_some(1),
                hint: statement.get("hint").cloned(),
                pipeline_stages: None,
                pipeline_rest: None,
                pipeline: None,
                collation: collation_of(&statement)?,
            })
        }
        Some(Command::FindAndModify) => Ok(ExplainedRead {
            filter_document: filter_of("query")?,
            sort: opt_document(body, "sort")?
                .map(SortSpec::parse)
                .transpose()?,
            skip: 0,
            limit: Some(1),
            hint: body.get("hint").cloned(),
            pipeline_stages: None,
            pipeline_rest: None,
            pipeline: None,
            collation: collation_of(body)?,
        }),
        _ => Err(OpError::NotSupported(format!(
            "explain of '{}' is not supported by docgate",
            request.name
        ))),
    }
}

fn uses_index(predicate: &Predicate) -> bool {
    match predicate {
        Predicate::KeyEquals(_)
        | Predicate::KeyIn(_)
        | Predicate::KeyRange { .. }
        | Predicate::IndexRange { .. }
        | Predicate::TextTerms { .. } => true,
        Predicate::And(parts) => parts.iter().any(uses_index),
        Predicate::Or(parts) => !parts.is_empty() && parts.iter().all(uses_index),
        Predicate::True | Predicate::PathEquals { .. } | Predicate::PathRange { .. } => false,
    }
}

/// Whether the predicate asks a text index's full-text engine.
fn uses_text_index(predicate: &Predicate) -> bool {
    match predicate {
        Predicate::TextTerms { .. } => true,
        Predicate::And(parts) | Predicate::Or(parts) => parts.iter().any(uses_text_index),
        _ => false,
    }
}

/// Gives the SORT stage of `stages` (if any) MongoDB's execution figures for memory: whether
/// it spilled to temporary files (`usedDisk`) and its limit (`memLimit`).
fn mark_sort_stage(stages: &mut Document, used_disk: bool, limit: usize) {
    let mut stage = stages;
    loop {
        if stage.get_str("stage").is_ok_and(|name| name == "SORT") {
            stage.insert("usedDisk", used_disk);
            stage.insert("memLimit", i64::try_from(limit).unwrap_or(i64::MAX));
            return;
        }
        match stage.get_mut("inputStage") {
            Some(Bson::Document(input)) => stage = input,
            _ => return,
        }
    }
}

/// MongoDB-style stages: FETCH over IXSCAN when an index selects or orders the documents,
/// COLLSCAN otherwise; SORT/SKIP/LIMIT when Rust does them.
fn describe_plan(plan: &ReadPlan, info: &CollectionInfo) -> Document {
    let names = crate::ops::index_usage::chosen_indexes(plan, info);
    let mut stage = if uses_index(&plan.scan.filter) || !names.is_empty() {
        let name = names.first().cloned().unwrap_or_else(|| "_id_".to_string());
        let key_pattern = info
            .indexes
            .iter()
            .find(|i| i.record.name == name)
            .map(|i| i.spec.key_pattern().clone())
            .unwrap_or_else(|| doc! {"_id": 1});
        let scan = doc! {"stage": "IXSCAN", "indexName": &name, "keyPattern": key_pattern, "indexesUsed": names.clone()};
        // A text index: the engine's term lookup (TEXT_OR), then the `$text` re-checked on
        // the fetched documents (TEXT_MATCH), as MongoDB names those stages.
        let text = uses_text_index(&plan.scan.filter);
        let input = match text {
            true => doc! {"stage": "TEXT_OR", "inputStage": scan},
            false => scan,
        };
        let mut fetch = doc! {"stage": "FETCH", "inputStage": input};
        if plan.residual.is_some() && !text {
            fetch.insert("filter", "residual (see docgate.residualFilter)");
        }
        match text {
            true => doc! {"stage": "TEXT_MATCH", "indexName": &name, "inputStage": fetch},
            false => fetch,
        }
    } else {
        doc! {"stage": "COLLSCAN", "direction": "forward"}
    };
    if plan.sort.is_some() {
        stage = doc! {"stage": "SORT", "inputStage": stage};
    }
    if plan.skip > 0 {
        stage = doc! {"stage": "SKIP", "skipAmount": plan.skip as i64, "inputStage": stage};
    }
    if let Some(limit) = plan.limit {
        stage = doc! {"stage": "LIMIT", "limitAmount": limit as i64, "inputStage": stage};
    }
    stage
}
