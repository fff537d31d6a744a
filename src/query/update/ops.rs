//! The update operators one by one: $set, $unset, $inc, $mul, $min, $max, $rename,
//! $currentDate, $setOnInsert, $push (with $each, $position, $slice, $sort), $addToSet,
//! $pop, $pull, $pullAll and $bit — argument parsing and what each does at its path, with
//! MongoDB's error codes.
//!
//! Not for: parsing the update document as a whole, conflicts and `_id` checks (`update/mod.rs`),
//! or walking paths (`update/path.rs`).

use crate::query::error::QueryError;
use crate::query::expr::ops::type_name;
use crate::query::filter::eval::value_satisfies;
use crate::query::filter::{is_operator_document, parse_operators, FieldPredicate, Filter};
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::update::path::{visit, Slot, UpdateContext};
use crate::query::value::compare::{compare_values, values_equal};
use crate::query::value::number::{arithmetic, Arithmetic, Number};
use crate::query::value::regex_match::RegexPredicate;
use crate::query::value::value_set::ValueSet;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Which update operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOperator {
    /// `$set`
    Set,
    /// `$unset`
    Unset,
    /// `$inc`
    Inc,
    /// `$mul`
    Mul,
    /// `$min`
    Min,
    /// `$max`
    Max,
    /// `$rename`
    Rename,
    /// `$currentDate`
    CurrentDate,
    /// `$setOnInsert`
    SetOnInsert,
    /// `$push`
    Push,
    /// `$addToSet`
    AddToSet,
    /// `$pop`
    Pop,
    /// `$pull`
    Pull,
    /// `$pullAll`
    PullAll,
    /// `$bit`
    Bit,
}

impl UpdateOperator {
    /// The operator for a `$name`.
    pub fn from_name(name: &str) -> Option<UpdateOperator> {
        Some(match name {
            "$set" => UpdateOperator::Set,
            "$unset" => UpdateOperator::Unset,
            "$inc" => UpdateOperator::Inc,
            "$mul" => UpdateOperator::Mul,
            "$min" => UpdateOperator::Min,
            "$max" => UpdateOperator::Max,
            "$rename" => UpdateOperator::Rename,
            "$currentDate" => UpdateOperator::CurrentDate,
            "$setOnInsert" => UpdateOperator::SetOnInsert,
            "$push" => UpdateOperator::Push,
            "$addToSet" => UpdateOperator::AddToSet,
            "$pop" => UpdateOperator::Pop,
            "$pull" => UpdateOperator::Pull,
            "$pullAll" => UpdateOperator::PullAll,
            "$bit" => UpdateOperator::Bit,
            _ => return None,
        })
    }
}

/// How `$pull` recognises elements to remove.
#[derive(Clone, Debug, PartialEq)]
pub enum PullCondition {
    /// Elements equal to the value.
    Equal(Bson),
    /// Elements satisfying operator predicates (`{$gte: 6}`) or matching a regex.
    Predicates(Vec<FieldPredicate>),
    /// Document elements matching a query (`{score: 8, item: "B"}`).
    Query(Box<Filter>),
}

/// `$push`/`$addToSet` arguments after `$each` and friends are unpacked.
#[derive(Clone, Debug, PartialEq)]
pub struct PushArguments {
    /// Values to add.
    pub each: Vec<Bson>,
    /// `$position`.
    pub position: Option<i64>,
    /// `$slice`.
    pub slice: Option<i64>,
    /// `$sort`: a direction for whole elements, or a spec for document elements.
    pub sort: Option<PushSort>,
}

/// The `$sort` modifier of `$push`.
#[derive(Clone, Debug, PartialEq)]
pub enum PushSort {
    /// `$sort: 1` / `-1`
    Whole(SortDirection),
    /// `$sort: {field: 1}`
    Fields(SortSpec),
}

/// One operator applied to one path.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateOperation {
    /// The operator.
    pub operator: UpdateOperator,
    /// Dotted target path.
    pub path: String,
    /// The raw argument.
    pub argument: Bson,
    push: Option<PushArguments>,
    pull: Option<PullCondition>,
}

impl UpdateOperation {
    /// The destination of a `$rename`.
    pub fn rename_target(&self) -> Option<&str> {
        match (&self.operator, &self.argument) {
            (UpdateOperator::Rename, Bson::String(s)) => Some(s),
            _ => None,
        }
    }
}

/// Parses `path: argument` for one operator.
pub fn parse_operation(
    operator: UpdateOperator,
    path: &str,
    argument: &Bson,
) -> Result<UpdateOperation, QueryError> {
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(QueryError::location(
            56,
            format!("An update path '{path}' contains an empty field name, which is not allowed."),
        ));
    }
    let mut push = None;
    let mut pull = None;
    match operator {
        UpdateOperator::Inc | UpdateOperator::Mul => {
            if Number::from_bson(argument).is_none() {
                let verb = if operator == UpdateOperator::Inc {
                    "increment"
                } else {
                    "multiply"
                };
                return Err(QueryError::type_mismatch(format!(
                    "Cannot {verb} with non-numeric argument: {{{path}: {argument}}}"
                )));
            }
        }
        UpdateOperator::Rename => match argument {
            Bson::String(to) if to == path => {
                return Err(QueryError::bad_value(format!(
                    "The source and target field for $rename must differ: {path}: \"{to}\""
                )))
            }
            Bson::String(to) if to.is_empty() || to.split('.').any(str::is_empty) => {
                return Err(QueryError::bad_value(
                    "The update path contains an empty field name",
                ))
            }
            Bson::String(_) => {}
            other => {
                return Err(QueryError::bad_value(format!(
                    "The 'to' field for $rename must be a string: {path}: {other}"
                )))
            }
        },
        UpdateOperator::CurrentDate => {
            let valid = match argument {
                Bson::Boolean(_) => true,
                Bson::Document(d) => matches!(
                    d.get("$type"),
                    Some(Bson::String(t)) if (t == "date" || t == "timestamp") && d.len() == 1
                ),
                _ => false,
            };
            if !valid {
                return Err(QueryError::bad_value(format!(
                    "{} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({{$type: 'timestamp/date'}}).",
                    type_name(Some(argument))
                )));
            }
        }
        UpdateOperator::Push | UpdateOperator::AddToSet => {
            push = Some(parse_push(operator, argument)?);
        }
        UpdateOperator::Pop => {
            let n = Number::from_bson(argument).map(Number::to_f64);
            if n != Some(1.0) && n != Some(-1.0) {
                return Err(QueryError::failed_to_parse(format!(
                    "$pop expects 1 or -1, found: {argument}"
                )));
            }
        }
        UpdateOperator::Pull => pull = Some(parse_pull(argument)?),
        UpdateOperator::PullAll => {
            if !matches!(argument, Bson::Array(_)) {
                return Err(QueryError::bad_value(format!(
                    "$pullAll requires an array argument but was given a {}",
                    type_name(Some(argument))
                )));
            }
        }
        UpdateOperator::Bit => parse_bit(path, argument)?,
        UpdateOperator::Set
        | UpdateOperator::SetOnInsert
        | UpdateOperator::Unset
        | UpdateOperator::Min
        | UpdateOperator::Max => {}
    }
    Ok(UpdateOperation {
        operator,
        path: path.to_string(),
        argument: argument.clone(),
        push,
        pull,
    })
}

fn parse_push(operator: UpdateOperator, argument: &Bson) -> Result<PushArguments, QueryError> {
    let name = if operator == UpdateOperator::Push {
        "$push"
    } else {
        "$addToSet"
    };
    let Bson::Document(d) = argument else {
        return Ok(single(argument));
    };
    if !d.contains_key("$each") {
        return Ok(single(argument));
    }
    let mut args = PushArguments {
        each: Vec::new(),
        position: None,
        slice: None,
        sort: None,
    };
    for (key, value) in d {
        match (key.as_str(), value) {
            ("$each", Bson::Array(items)) => args.each = items.clone(),
            ("$each", other) => {
                return Err(QueryError::bad_value(format!(
                    "The argument to $each in {name} must be an array but it was of type: {}",
                    type_name(Some(other))
                )))
            }
            ("$position" | "$slice", v) if operator == UpdateOperator::Push => {
                let n = Number::from_bson(v)
                    .and_then(Number::to_exact_i64)
                    .ok_or_else(|| {
                        QueryError::bad_value(format!(
                            "The value for {key} must be an integer value but was given type: {}",
                            type_name(Some(v))
                        ))
                    })?;
                if key == "$position" {
                    args.position = Some(n);
                } else {
                    args.slice = Some(n);
                }
            }
            ("$sort", v) if operator == UpdateOperator::Push => {
                args.sort = Some(match v {
                    Bson::Document(spec) => PushSort::Fields(SortSpec::parse(spec)?),
                    other => PushSort::Whole(match Number::from_bson(other).and_then(Number::to_exact_i64) {
 Some(1) => SortDirection::Ascending,
 Some(-1) => SortDirection::Descending,
 _ => {
                            return Err(QueryError::bad_value(
                                "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
                            ))
                        }
                    }),
                });
            }
            (other, _) => {
                return Err(QueryError::bad_value(format!(
                    "Unrecognized clause in {name}: {other}"
                )))
            }
        }
    }
    Ok(args)
}

fn single(value: &Bson) -> PushArguments {
    PushArguments {
        each: vec![value.clone()],
        position: None,
        slice: None,
        sort: None,
    }
}

fn parse_pull(argument: &Bson) -> Result<PullCondition, QueryError> {
    Ok(match argument {
        Bson::Document(d) if is_operator_document(d) => {
            PullCondition::Predicates(parse_operators(d, 0)?)
        }
        Bson::Document(d) => PullCondition::Query(Box::new(Filter::parse(d)?)),
        Bson::RegularExpression(re) => PullCondition::Predicates(vec![FieldPredicate::Regex(
            RegexPredicate::new(re.pattern.as_str(), re.options.as_str())?,
        )]),
        other => PullCondition::Equal(other.clone()),
    })
}

fn parse_bit(path: &str, argument: &Bson) -> Result<(), QueryError> {
    let Bson::Document(d) = argument else {
        return Err(QueryError::bad_value(format!(
            "The $bit modifier is not compatible with a {}. You must pass in an embedded document: {{$bit: {{field: {{and/or/xor: #}}}}",
            type_name(Some(argument))
        )));
    };
    for (op, value) in d {
        if !matches!(op.as_str(), "and" | "or" | "xor") {
            return Err(QueryError::bad_value(format!(
                "The $bit modifier only supports 'and', 'or', and 'xor', not '{op}' which is an unknown operator: {{{op}: {value}}}"
            )));
        }
        if !matches!(value, Bson::Int32(_) | Bson::Int64(_)) {
            return Err(QueryError::bad_value(format!(
                "The $bit modifier field must be an Integer(32/64 bit); a '{}' is not supported here: {{{op}: {value}}} for field {path}",
                type_name(Some(value))
            )));
        }
    }
    Ok(())
}

fn id_text(doc_id: &Option<Bson>) -> String {
    match doc_id {
        Some(id) => format!("{{_id: {id}}}"),
        None => "{}".to_string(),
    }
}

/// Applies one operation to a document.
pub fn apply_operation(
    operation: &UpdateOperation,
    doc: &mut Document,
    context: &UpdateContext,
) -> Result<(), QueryError> {
    let doc_id = doc.get("_id").cloned();
    let path = operation.path.as_str();
    let argument = &operation.argument;
    match operation.operator {
        UpdateOperator::Set | UpdateOperator::SetOnInsert => {
            visit(doc, path, true, context, &mut |mut slot| {
                slot.set(argument.clone());
                Ok(())
            })
        }
        UpdateOperator::Unset => visit(doc, path, false, context, &mut |mut slot| {
            slot.remove();
            Ok(())
        }),
        UpdateOperator::Inc | UpdateOperator::Mul => {
            increment_or_multiply(operation, doc, context, &doc_id)
        }
        UpdateOperator::Min | UpdateOperator::Max => {
            let wanted = if operation.operator == UpdateOperator::Min {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            visit(doc, path, true, context, &mut |mut slot| {
                let replace = match slot.get() {
                    None => true,
                    Some(current) => compare_values(argument, current) == wanted,
                };
                if replace {
                    slot.set(argument.clone());
                }
                Ok(())
            })
        }
        UpdateOperator::CurrentDate => {
            let now = bson::DateTime::now();
            let value = match argument {
                Bson::Document(d) if matches!(d.get("$type"), Some(Bson::String(t)) if t == "timestamp") => {
                    Bson::Timestamp(bson::Timestamp {
                        time: (now.timestamp_millis() / 1000) as u32,
                        increment: 1,
                    })
                }
                _ => Bson::DateTime(now),
            };
            visit(doc, path, true, context, &mut |mut slot| {
                slot.set(value.clone());
                Ok(())
            })
        }
        UpdateOperator::Rename => rename(
            doc,
            path,
            operation.rename_target().unwrap_or(path),
            context,
        ),
        UpdateOperator::Push | UpdateOperator::AddToSet => {
            push_or_add_to_set(operation, doc, context, &doc_id)
        }
        UpdateOperator::Pop => {
            let from_front = Number::from_bson(argument).map(Number::to_f64) == Some(-1.0);
            visit(
                doc,
                path,
                false,
                context,
                &mut |mut slot| match slot.get_mut() {
                    None => Ok(()),
                    Some(Bson::Array(items)) => {
                        if !items.is_empty() {
                            if from_front {
                                items.remove(0);
                            } else {
                                items.pop();
                            }
                        }
                        Ok(())
                    }
                    Some(other) => Err(QueryError::type_mismatch(format!(
                        "Path '{path}' contains an element of non-array type '{}'",
                        type_name(Some(other))
                    ))),
                },
            )
        }
        UpdateOperator::Pull | UpdateOperator::PullAll => pull(operation, doc, context),
        UpdateOperator::Bit => visit(doc, path, true, context, &mut |mut slot| {
            let mut value = match slot.get() {
                None => Bson::Int32(0),
                Some(v @ (Bson::Int32(_) | Bson::Int64(_))) => v.clone(),
                Some(other) => {
                    return Err(QueryError::bad_value(format!(
                        "Cannot apply $bit to a value of non-integral type.{} has the field {} of non-integer type {}",
                        id_text(&doc_id),
                        slot.name(),
                        type_name(Some(other))
                    )))
                }
            };
            if let Bson::Document(ops) = argument {
                for (op, operand) in ops {
                    value = bitwise(op, &value, operand);
                }
            }
            slot.set(value);
            Ok(())
        }),
    }
}

/// `$inc` and `$mul`, which fail on integer overflow where aggregation widens to double.
fn increment_or_multiply(
    operation: &UpdateOperation,
    doc: &mut Document,
    context: &UpdateContext,
    doc_id: &Option<Bson>,
) -> Result<(), QueryError> {
    let path = operation.path.as_str();
    let argument = &operation.argument;
    let (op, name) = if operation.operator == UpdateOperator::Inc {
        (Arithmetic::Add, "$inc")
    } else {
        (Arithmetic::Multiply, "$mul")
    };
    visit(doc, path, true, context, &mut |mut slot| {
        let next = match slot.get() {
            None => match op {
                Arithmetic::Multiply => arithmetic(op, &Bson::Int32(0), argument),
                _ => Some(argument.clone()),
            },
            Some(current) => arithmetic(op, current, argument),
        };
        let integers = |v: Option<&Bson>| matches!(v, Some(Bson::Int32(_) | Bson::Int64(_)));
        if integers(slot.get()) && integers(Some(argument)) && matches!(next, Some(Bson::Double(_)))
        {
            // Update arithmetic on integers fails on 64-bit overflow (aggregation
            // widens to double instead).
            let current = match slot.get() {
                Some(Bson::Int32(i)) => format!("(NumberInt){i}"),
                Some(Bson::Int64(i)) => format!("(NumberLong){i}"),
                _ => String::new(),
            };
            return Err(QueryError::bad_value(format!(
                "Failed to apply {name} operations to current value ({current}) for document {}",
                id_text(doc_id)
            )));
        }
        match next {
            Some(v) => {
                slot.set(v);
                Ok(())
            }
            None => Err(QueryError::type_mismatch(format!(
                "Cannot apply {name} to a value of non-numeric type. {} has the field '{}' of non-numeric type {}",
                id_text(doc_id),
                slot.name(),
                type_name(slot.get())
            ))),
        }
    })
}

/// `$push` (with `$each`, `$position`, `$slice`, `$sort`) and `$addToSet` on the array at the path.
fn push_or_add_to_set(
    operation: &UpdateOperation,
    doc: &mut Document,
    context: &UpdateContext,
    doc_id: &Option<Bson>,
) -> Result<(), QueryError> {
    let path = operation.path.as_str();
    let Some(args) = &operation.push else {
        return Ok(());
    };
    let is_push = operation.operator == UpdateOperator::Push;
    visit(doc, path, true, context, &mut |mut slot| {
        let name = slot.name();
        let mut items = match slot.get() {
            None => Vec::new(),
            Some(Bson::Array(items)) => items.clone(),
            Some(other) if is_push => {
                return Err(QueryError::bad_value(format!(
                    "The field '{name}' must be an array but is of type {} in document {}",
                    type_name(Some(other)),
                    id_text(doc_id)
                )))
            }
            Some(other) => {
                return Err(QueryError::bad_value(format!(
                    "Cannot apply $addToSet to non-array field. Field named '{name}' has non-array type {}",
                    type_name(Some(other))
                )))
            }
        };
        if is_push {
            push_into(&mut items, args);
        } else {
            add_to_set(&mut items, &args.each);
        }
        slot.set(Bson::Array(items));
        Ok(())
    })
}

/// `$pull` (a value or a condition) and `$pullAll` (values) on the array at the path.
fn pull(
    operation: &UpdateOperation,
    doc: &mut Document,
    context: &UpdateContext,
) -> Result<(), QueryError> {
    let path = operation.path.as_str();
    let argument = &operation.argument;
    let condition = operation.pull.clone();
    // `$pullAll` of several values: their keys, hashed once for every array visited.
    let pulled = match (&condition, argument) {
        (None, Bson::Array(values)) if values.len() > 1 => {
            let mut set = ValueSet::new();
            for v in values {
                set.insert(v);
            }
            Some(set)
        }
        _ => None,
    };
    visit(
        doc,
        path,
        false,
        context,
        &mut |mut slot| match slot.get_mut() {
            None => Ok(()),
            Some(Bson::Array(items)) => {
                match &pulled {
                    Some(set) => items.retain(|item| !set.contains(item)),
                    None => items.retain(|item| !should_pull(condition.as_ref(), argument, item)),
                }
                Ok(())
            }
            Some(_) => Err(QueryError::bad_value(
                "Cannot apply $pull to a non-array value",
            )),
        },
    )
}

fn bitwise(op: &str, value: &Bson, operand: &Bson) -> Bson {
    let apply = |a: i64, b: i64| match op {
        "and" => a & b,
        "or" => a | b,
        _ => a ^ b,
    };
    match (value, operand) {
        (Bson::Int32(a), Bson::Int32(b)) => Bson::Int32(apply(i64::from(*a), i64::from(*b)) as i32),
        _ => {
            let a = Number::from_bson(value)
                .and_then(Number::to_exact_i64)
                .unwrap_or(0);
            let b = Number::from_bson(operand)
                .and_then(Number::to_exact_i64)
                .unwrap_or(0);
            Bson::Int64(apply(a, b))
        }
    }
}

fn should_pull(condition: Option<&PullCondition>, argument: &Bson, item: &Bson) -> bool {
    match condition {
        None => match argument {
            Bson::Array(values) => values.iter().any(|v| values_equal(v, item)),
            _ => false,
        },
        Some(PullCondition::Equal(v)) => values_equal(v, item),
        Some(PullCondition::Predicates(predicates)) => {
            predicates.iter().all(|p| value_satisfies(p, item))
        }
        Some(PullCondition::Query(filter)) => match item {
            Bson::Document(d) => filter.matches(d),
            _ => false,
        },
    }
}

/// `$addToSet`: appends each value that no item (nor an earlier value) equals.
fn add_to_set(items: &mut Vec<Bson>, each: &[Bson]) {
    if let [one] = each {
        if !items.iter().any(|item| values_equal(item, one)) {
            items.push(one.clone());
        }
        return;
    }
    // With `$each`, hash the keys once instead of scanning the array per value.
    let mut seen = ValueSet::new();
    for item in items.iter() {
        seen.insert(item);
    }
    for v in each {
        if seen.insert(v) {
            items.push(v.clone());
        }
    }
}

fn push_into(items: &mut Vec<Bson>, args: &PushArguments) {
    let len = items.len() as i64;
    let at = match args.position {
        None => len,
        Some(p) if p >= 0 => p.min(len),
        Some(p) => (len + p).max(0),
    } as usize;
    items.splice(at..at, args.each.iter().cloned());
    match &args.sort {
        Some(PushSort::Whole(direction)) => items.sort_by(|a, b| {
            let order = compare_values(a, b);
            if *direction == SortDirection::Descending {
                order.reverse()
            } else {
                order
            }
        }),
        Some(PushSort::Fields(spec)) => items.sort_by(|a, b| {
            let empty = Document::new();
            let da = match a {
                Bson::Document(d) => d,
                _ => &empty,
            };
            let db = match b {
                Bson::Document(d) => d,
                _ => &empty,
            };
            spec.compare(da, db)
        }),
        None => {}
    }
    if let Some(limit) = args.slice {
        if limit >= 0 {
            items.truncate(limit as usize);
        } else {
            let keep = usize::try_from(limit.unsigned_abs()).unwrap_or(usize::MAX);
            if items.len() > keep {
                items.drain(..items.len() - keep);
            }
        }
    }
}

fn rename(
    doc: &mut Document,
    from: &str,
    to: &str,
    context: &UpdateContext,
) -> Result<(), QueryError> {
    // The source must not run through arrays.
    let mut current: Option<&Bson> = None;
    for (i, part) in from.split('.').enumerate() {
        let next = if i == 0 {
            doc.get(part)
        } else {
            match current {
                Some(Bson::Document(d)) => d.get(part),
                Some(Bson::Array(_)) => {
                    return Err(QueryError::bad_value(format!(
                        "The source field cannot be an array element, '{from}' in doc with an array along the path"
                    )))
                }
                _ => None,
            }
        };
        match next {
            Some(v) => current = Some(v),
            None => return Ok(()),
        }
    }
    let Some(value) = current.cloned() else {
        return Ok(());
    };
    let mut probe: Option<&Bson> = None;
    for (i, part) in to.split('.').enumerate() {
        let next = if i == 0 {
            doc.get(part)
        } else {
            match probe {
                Some(Bson::Document(d)) => d.get(part),
                Some(Bson::Array(_)) => {
                    return Err(QueryError::bad_value(format!(
                        "The destination field cannot be an array element, '{to}' in doc with an array along the path"
                    )))
                }
                _ => None,
            }
        };
        probe = next;
        if probe.is_none() {
            break;
        }
    }
    visit(doc, from, false, context, &mut |mut slot: Slot<'_>| {
        slot.remove();
        Ok(())
    })?;
    visit(doc, to, true, context, &mut |mut slot| {
        slot.set(value.clone());
        Ok(())
    })
}
