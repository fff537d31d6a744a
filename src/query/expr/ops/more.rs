//! The operators added after the first set ([`MoreOperator`]): their names and arities
//! ([`lookup`]) and their named-argument layouts ([`named_arguments`]). `ops::apply_more`
//! hands each to its family file — math to `arithmetic.rs`, $trim/$substrBytes/$indexOfCP/
//! $strcasecmp/$regexMatch to `string.rs`, $reverseArray/$range/$slice/$indexOfArray/
//! $anyElementTrue/$allElementsTrue/$sortArray to `array.rs`, set operators to `set.rs`, and
//! $mergeObjects/$objectToArray/$arrayToObject/$getField to `object.rs`.
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
        _ => return None,
    })
}
