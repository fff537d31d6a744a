//! Robustness: thousands of random (often invalid) filters, updates, projections and sorts
//! over random documents must produce results or `QueryError`s, never a panic.
//!
//! Not for: checking results (the module tests do that).

use super::sort::SortSpec;
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::update::UpdateSpec;
use crate::query::value::keys::encode_key;
use crate::query::value::test_values::Generator;
use bson::{doc, Bson, Document};

const ROUNDS: usize = 4000;

fn random_document(generator: &mut Generator) -> Document {
    let mut d = doc! {"_id": generator.leaf()};
    for _ in 0..generator.below(4) {
        let key = generator.pick(&["a", "b", "c", "0"]).to_string();
        let value = generator.value(3);
        d.insert(key, value);
    }
    d
}

#[test]
fn random_queries_never_panic() {
    let mut generator = Generator::new(0x5eed_0001);
    let (mut parsed, mut matched) = (0, 0);
    for _ in 0..ROUNDS {
        let d = random_document(&mut generator);
        let filter = generator.filter(2);
        if let Ok(f) = Filter::parse(&filter) {
            parsed += 1;
            matched += usize::from(f.matches(&d));
            let _ = f.try_matches(&d);
            let _ = crate::query::filter::upsert_seed(&f);
            let _ = crate::query::filter::positional::matched_array_position(&f, &d);
        }
        let projection = generator.projection();
        if let Ok(p) = Projection::parse(&projection) {
            let _ = p.apply(&d);
        }
        let mut sort = doc! {};
        sort.insert(generator.path(), generator.leaf());
        if let Ok(s) = SortSpec::parse(&sort) {
            let mut docs = vec![d.clone(), random_document(&mut generator)];
            s.sort(&mut docs);
        }
        let _ = encode_key(&Bson::Document(d));
    }
    // The generator must exercise the evaluator, not only the parser's error paths.
    assert!(
        parsed > ROUNDS / 4 && matched > ROUNDS / 20,
        "{parsed} parsed, {matched} matched"
    );
}

#[test]
fn random_updates_never_panic() {
    let mut generator = Generator::new(0x5eed_0002);
    let mut applied = 0;
    for _ in 0..ROUNDS {
        let mut d = random_document(&mut generator);
        let update = generator.update();
        if let Ok(spec) = UpdateSpec::parse(&update) {
            applied += usize::from(spec.apply(&mut d).is_ok());
            let _ = spec.apply_for_upsert(random_document(&mut generator));
        }
    }
    assert!(applied > ROUNDS / 10, "{applied} applied");
}

const EXPRESSION_OPERATORS: [&str; 111] = [
    "$add",
    "$subtract",
    "$multiply",
    "$divide",
    "$mod",
    "$abs",
    "$ceil",
    "$floor",
    "$trunc",
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$cmp",
    "$and",
    "$or",
    "$not",
    "$ifNull",
    "$concat",
    "$toUpper",
    "$toLower",
    "$strLenBytes",
    "$strLenCP",
    "$substrCP",
    "$split",
    "$size",
    "$arrayElemAt",
    "$first",
    "$last",
    "$in",
    "$isArray",
    "$concatArrays",
    "$type",
    "$isNumber",
    "$max",
    "$min",
    "$sum",
    "$avg",
    "$toString",
    "$toInt",
    "$toLong",
    "$toDouble",
    "$toDecimal",
    "$toBool",
    "$year",
    "$month",
    "$dayOfWeek",
    "$week",
    "$toDate",
    "$round",
    "$sqrt",
    "$pow",
    "$exp",
    "$ln",
    "$log10",
    "$log",
    "$trim",
    "$substrBytes",
    "$indexOfCP",
    "$strcasecmp",
    "$regexMatch",
    "$reverseArray",
    "$range",
    "$slice",
    "$indexOfArray",
    "$setUnion",
    "$setDifference",
    "$setIsSubset",
    "$anyElementTrue",
    "$mergeObjects",
    "$objectToArray",
    "$arrayToObject",
    "$cond",
    "$setField",
    "$unsetField",
    "$firstN",
    "$lastN",
    "$maxN",
    "$minN",
    "$zip",
    "$stdDevPop",
    "$stdDevSamp",
    "$percentile",
    "$median",
    "$indexOfBytes",
    "$regexFind",
    "$regexFindAll",
    "$replaceOne",
    "$replaceAll",
    "$sin",
    "$acos",
    "$atanh",
    "$atan2",
    "$degreesToRadians",
    "$radiansToDegrees",
    "$bitAnd",
    "$bitOr",
    "$bitXor",
    "$bitNot",
    "$bsonSize",
    "$binarySize",
    "$isoWeek",
    "$isoWeekYear",
    "$tsSecond",
    "$tsIncrement",
    "$toObjectId",
    "$toHashedIndexKey",
    "$rand",
    "$meta",
];

const NAMED_ARGUMENTS: &[&str] = &[
    "input",
    "n",
    "field",
    "value",
    "find",
    "replacement",
    "regex",
    "options",
    "p",
    "inputs",
    "defaults",
    "useLongestLength",
];

fn random_expression(generator: &mut Generator, depth: u32) -> Bson {
    match generator.below(4) {
        0 => Bson::String(format!("${}", generator.path())),
        1 if depth > 0 => {
            let op = generator.pick(&EXPRESSION_OPERATORS);
            let args: Vec<Bson> = (0..generator.below(4))
                .map(|_| random_expression(generator, depth - 1))
                .collect();
            let mut d = Document::new();
            if generator.below(2) == 0 {
                d.insert(op, Bson::Array(args));
            } else {
                // The named-argument form, with a random choice of the names the 7.0
                // operators take.
                let mut named = Document::new();
                for name in NAMED_ARGUMENTS {
                    if generator.below(3) == 0 {
                        named.insert(*name, random_expression(generator, depth - 1));
                    }
                }
                if generator.below(2) == 0 {
                    named.insert("method", "approximate");
                }
                d.insert(op, Bson::Document(named));
            }
            Bson::Document(d)
        }
        _ => generator.value(1),
    }
}

#[test]
fn random_expressions_never_panic() {
    let mut generator = Generator::new(0x5eed_0003);
    let mut evaluated = 0;
    for _ in 0..ROUNDS {
        let d = random_document(&mut generator);
        let expression = random_expression(&mut generator, 3);
        if let Ok(e) = crate::query::expr::Expression::parse(&expression) {
            evaluated += usize::from(e.evaluate(&d).is_ok());
        }
        let stages = vec![
            doc! {"$addFields": {generator.path(): random_expression(&mut generator, 2)}},
            doc! {"$group": {"_id": random_expression(&mut generator, 1), "n": {"$sum": random_expression(&mut generator, 1)}}},
        ];
        if let Ok(p) = crate::query::aggregate::Pipeline::parse(&stages) {
            let _ = p.run(vec![d.clone(), random_document(&mut generator)]);
        }
    }
    assert!(evaluated > ROUNDS / 4, "{evaluated} evaluated");
}
