//! The operators added after the first set ([`MoreOperator`]): their names and arities
//! ([`lookup`]) and their named-argument layouts ([`named_arguments`]). `ops::apply_more`
//! hands each to its family file — math to `arithmetic.rs`, $trim/$substrBytes/$indexOfCP/
//! $strcasecmp/$regexMatch to `string.rs`, $reverseArray/$range/$slice/$indexOfArray/
//! $anyElementTrue/$allElementsTrue/$sortArray to `array.rs`, set operators to `set.rs`, and
//! $mergeObjects/$objectToArray/$arrayToObject/$getField/$setField to `object.rs`, and the
//! MongoDB 7.0 additions to their own files: $firstN/$lastN/$maxN/$minN/$zip and the
//! statistics to `array_n.rs`, $indexOfBytes/$regexFind(All)/$replaceOne/$replaceAll to
//! `string_search.rs`, the trigonometry to `trigonometry.rs`, the bitwise operators to
//! `bitwise.rs`, and $bsonSize/$binarySize/$tsSecond/$tsIncrement/$toObjectId/$rand/
//! $toHashedIndexKey to `value_parts.rs` (the hash itself in `hashed_key.rs`). $setField/$unsetField, the `…N` forms, $replaceOne/$replaceAll, the
//! regex operators, $zip, $percentile/$median and $rand are parsed by `expr/parse_more.rs`
//! (their entries here, where they have one, are not reached).
//!
//! Not for: evaluating any operator (the family files), dates (`date.rs`) or parsing
//! (`expr/parse.rs`).

/// The extra operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoreOperator {
    /// `$round` [number, place]
    Round,
    /// `$sqrt`
    Sqrt,
    /// `$pow`
    Pow,
    /// `$exp`
    Exp,
    /// `$ln`
    Ln,
    /// `$log10`
    Log10,
    /// `$log` [number, base]
    Log,
    /// `$trim` (input, chars)
    Trim,
    /// `$ltrim` (input, chars)
    LeftTrim,
    /// `$rtrim` (input, chars)
    RightTrim,
    /// `$substrBytes` / `$substr`
    SubstrBytes,
    /// `$indexOfCP`
    IndexOfCodePoint,
    /// `$strcasecmp`
    StrCaseCmp,
    /// `$regexMatch` (input, regex, options)
    RegexMatch,
    /// `$reverseArray`
    ReverseArray,
    /// `$range`
    Range,
    /// `$slice` (expression)
    Slice,
    /// `$indexOfArray`
    IndexOfArray,
    /// `$setUnion`
    SetUnion,
    /// `$setIntersection`
    SetIntersection,
    /// `$setDifference`
    SetDifference,
    /// `$setEquals`
    SetEquals,
    /// `$setIsSubset`
    SetIsSubset,
    /// `$anyElementTrue`
    AnyElementTrue,
    /// `$allElementsTrue`
    AllElementsTrue,
    /// `$mergeObjects`
    MergeObjects,
    /// `$objectToArray`
    ObjectToArray,
    /// `$arrayToObject`
    ArrayToObject,
    /// `$getField` (field, input)
    GetField,
    /// `$sortArray` (input, sortBy)
    SortArray,
    /// `$setField` / `$unsetField` (field, input, value; a missing value removes)
    SetField,
    /// `$firstN` (input, n), array form
    FirstN,
    /// `$lastN` (input, n), array form
    LastN,
    /// `$maxN` (input, n), array form
    MaxN,
    /// `$minN` (input, n), array form
    MinN,
    /// `$zip` (useLongestLength, then the inputs, then the defaults; see `array_n.rs`)
    Zip,
    /// `$stdDevPop` (expression form)
    StdDevPop,
    /// `$stdDevSamp` (expression form)
    StdDevSamp,
    /// `$percentile` / `$median` (input, p), method "approximate"
    Percentile,
    /// `$indexOfBytes`
    IndexOfBytes,
    /// `$regexFind` (input, regex, options)
    RegexFind,
    /// `$regexFindAll` (input, regex, options)
    RegexFindAll,
    /// `$replaceOne` (input, find, replacement)
    ReplaceOne,
    /// `$replaceAll` (input, find, replacement)
    ReplaceAll,
    /// A trigonometric function (`trigonometry.rs`).
    Trigonometric(super::trigonometry::TrigFunction),
    /// `$atan2` [y, x]
    Atan2,
    /// `$degreesToRadians`
    DegreesToRadians,
    /// `$radiansToDegrees`
    RadiansToDegrees,
    /// `$bitAnd`
    BitAnd,
    /// `$bitOr`
    BitOr,
    /// `$bitXor`
    BitXor,
    /// `$bitNot`
    BitNot,
    /// `$bsonSize`
    BsonSize,
    /// `$binarySize`
    BinarySize,
    /// `$tsSecond`
    TsSecond,
    /// `$tsIncrement`
    TsIncrement,
    /// `$toObjectId`
    ToObjectId,
    /// `$rand`
    Rand,
    /// `{$meta: "textScore"}`: its argument is the document's text score field.
    TextScore,
    /// `$toHashedIndexKey`
    ToHashedIndexKey,
}

/// Named-argument layouts: operator name → argument names in order.
pub fn named_arguments(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "$trim" | "$ltrim" | "$rtrim" => &["input", "chars"],
        "$regexMatch" => &["input", "regex", "options"],
        "$getField" => &["field", "input"],
        "$sortArray" => &["input", "sortBy"],
        _ => return None,
    })
}

/// The operator for a name, with its arity.
pub fn lookup(name: &str) -> Option<(MoreOperator, usize, Option<usize>)> {
    use MoreOperator::*;
    Some(match name {
        "$round" => (Round, 1, Some(2)),
        "$sqrt" => (Sqrt, 1, Some(1)),
        "$pow" => (Pow, 2, Some(2)),
        "$exp" => (Exp, 1, Some(1)),
        "$ln" => (Ln, 1, Some(1)),
        "$log10" => (Log10, 1, Some(1)),
        "$log" => (Log, 2, Some(2)),
        "$trim" => (Trim, 1, Some(2)),
        "$ltrim" => (LeftTrim, 1, Some(2)),
        "$rtrim" => (RightTrim, 1, Some(2)),
        "$substrBytes" | "$substr" => (SubstrBytes, 3, Some(3)),
        "$indexOfCP" => (IndexOfCodePoint, 2, Some(4)),
        "$strcasecmp" => (StrCaseCmp, 2, Some(2)),
        "$regexMatch" => (RegexMatch, 2, Some(3)),
        "$reverseArray" => (ReverseArray, 1, Some(1)),
        "$range" => (Range, 2, Some(3)),
        "$slice" => (Slice, 2, Some(3)),
        "$indexOfArray" => (IndexOfArray, 2, Some(4)),
        "$setUnion" => (SetUnion, 0, None),
        "$setIntersection" => (SetIntersection, 0, None),
        "$setDifference" => (SetDifference, 2, Some(2)),
        "$setEquals" => (SetEquals, 2, None),
        "$setIsSubset" => (SetIsSubset, 2, Some(2)),
        "$anyElementTrue" => (AnyElementTrue, 1, Some(1)),
        "$allElementsTrue" => (AllElementsTrue, 1, Some(1)),
        "$mergeObjects" => (MergeObjects, 0, None),
        "$objectToArray" => (ObjectToArray, 1, Some(1)),
        "$arrayToObject" => (ArrayToObject, 1, Some(1)),
        "$getField" => (GetField, 1, Some(2)),
        "$sortArray" => (SortArray, 2, Some(2)),
        "$stdDevPop" => (StdDevPop, 0, None),
        "$stdDevSamp" => (StdDevSamp, 0, None),
        "$indexOfBytes" => (IndexOfBytes, 2, Some(4)),
        "$atan2" => (Atan2, 2, Some(2)),
        "$degreesToRadians" => (DegreesToRadians, 1, Some(1)),
        "$radiansToDegrees" => (RadiansToDegrees, 1, Some(1)),
        "$bitAnd" => (BitAnd, 0, None),
        "$bitOr" => (BitOr, 0, None),
        "$bitXor" => (BitXor, 0, None),
        "$bitNot" => (BitNot, 1, Some(1)),
        "$bsonSize" => (BsonSize, 1, Some(1)),
        "$binarySize" => (BinarySize, 1, Some(1)),
        "$tsSecond" => (TsSecond, 1, Some(1)),
        "$tsIncrement" => (TsIncrement, 1, Some(1)),
        "$toObjectId" => (ToObjectId, 1, Some(1)),
        "$toHashedIndexKey" => (ToHashedIndexKey, 1, Some(1)),
        other => {
            let function = super::trigonometry::TrigFunction::from_name(other)?;
            (Trigonometric(function), 1, Some(1))
        }
    })
}
