//! Unit tests of collection validators: the options, the `$jsonSchema` keywords, and the
//! details of error 121 for the shapes the manual shows.

use bson::{doc, Bson, Document};

use super::*;

fn validator(options: Document) -> CollectionValidator {
    CollectionValidator::from_options(&options)
        .expect("valid options")
        .expect("a validator")
}

fn students() -> CollectionValidator {
    validator(doc! {"validator": {"$jsonSchema": {
        "bsonType": "object",
        "title": "Student Object Validation",
        "required": ["address", "major", "name", "year"],
        "properties": {
            "name": {"bsonType": "string", "description": "'name' must be a string and is required"},
            "year": {"bsonType": "int", "minimum": 2017, "maximum": 3017},
            "gpa": {"bsonType": ["double"], "description": "'gpa' must be a double if the field exists"},
        },
    }}})
}

#[test]
fn json_schema_details_follow_mongodb_shapes() {
    let v = students();
    let document = doc! {"_id": 1, "name": "Alice", "year": 2019, "major": "History", "gpa": 3};
    assert!(!v.admits(&document));
    let info = v.error_info(&document);
    assert_eq!(info.get("failingDocumentId"), Some(&Bson::Int32(1)));
    let details = info.get_document("details").unwrap();
    assert_eq!(details.get_str("operatorName").unwrap(), "$jsonSchema");
    assert_eq!(
        details.get_str("title").unwrap(),
        "Student Object Validation"
    );
    let rules = details.get_array("schemaRulesNotSatisfied").unwrap();
    assert_eq!(
        rules[0],
        Bson::Document(doc! {
            "operatorName": "properties",
            "propertiesNotSatisfied": [{
                "propertyName": "gpa",
                "description": "'gpa' must be a double if the field exists",
                "details": [{
                    "operatorName": "bsonType",
                    "specifiedAs": {"bsonType": ["double"]},
                    "reason": "type did not match",
                    "consideredValue": 3,
                    "consideredType": "int",
                }],
            }],
        })
    );
    assert_eq!(
        rules[1],
        Bson::Document(doc! {
            "operatorName": "required",
            "specifiedAs": {"required": ["address", "major", "name", "year"]},
            "missingProperties": ["address"],
        })
    );
    assert_eq!(rules.len(), 2);
    let fine =
        doc! {"_id": 2, "name": "Bob", "year": 2020, "major": "Math", "address": {}, "gpa": 3.5};
    assert!(v.admits(&fine));
}

#[test]
fn query_operator_details() {
    let v = validator(doc! {"validator": {"a": {"$gt": 5}}});
    let details = v
        .error_info(&doc! {"_id": 1, "a": 2})
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(
        details,
        doc! {"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison failed", "consideredValue": 2}
    );
    let missing = v
        .error_info(&doc! {"_id": 1})
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(missing.get_str("reason").unwrap(), "field was missing");

    let v = validator(doc! {"validator": {"a": {"$type": "string"}, "b": {"$exists": true}}});
    let details = v
        .error_info(&doc! {"_id": 1, "a": 1, "b": 2})
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(
        details,
        doc! {"operatorName": "$and", "clausesNotSatisfied": [{"index": 0, "details": {
            "operatorName": "$type", "specifiedAs": {"a": {"$type": "string"}},
            "reason": "type did not match", "consideredValue": 1, "consideredType": "int",
        }}]}
    );

    let v = validator(doc! {"validator": {"$or": [{"a": 1}, {"b": {"$in": [1, 2]}}]}});
    let details = v
        .error_info(&doc! {"_id": 1, "a": 2, "b": [3, 4]})
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(details.get_str("operatorName").unwrap(), "$or");
    let clauses = details.get_array("clausesNotSatisfied").unwrap();
    assert_eq!(clauses.len(), 2);
    assert_eq!(
        clauses[1],
        Bson::Document(doc! {"index": 1, "details": {
            "operatorName": "$in", "specifiedAs": {"b": {"$in": [1, 2]}},
            "reason": "no matching value found in array", "consideredValues": [3, 4],
        }})
    );

    let v = validator(doc! {"validator": {"$nor": [{"a": 1}]}});
    let details = v
        .error_info(&doc! {"_id": 1, "a": 1})
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(
        details,
        doc! {"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": {
            "operatorName": "$eq", "specifiedAs": {"a": 1}, "reason": "comparison succeeded", "consideredValue": 1,
        }}]}
    );
}

#[test]
fn operators_of_one_field_are_clauses_of_the_top_level_and() {
    let v = validator(doc! {"validator": {"a": {"$gt": 1, "$lt": 5}, "b": 1}});
    let details = v
        .error_info(&doc! {"_id": 1, "a": 9, "b": 2})
        .get_document("details")
        .unwrap()
        .clone();
    let clauses = details.get_array("clausesNotSatisfied").unwrap();
    let indexes: Vec<i32> = clauses
        .iter()
        .map(|c| c.as_document().unwrap().get_i32("index").unwrap())
        .collect();
    assert_eq!(indexes, [1, 2]);
    assert_eq!(
        clauses[0]
            .as_document()
            .unwrap()
            .get_document("details")
            .unwrap(),
        &doc! {"operatorName": "$lt", "specifiedAs": {"a": {"$lt": 5}}, "reason": "comparison failed", "consideredValue": 9}
    );
    let v = validator(doc! {"validator": {"a": {"$ne": 1}}});
    assert_eq!(
        v.error_info(&doc! {"_id": 1, "a": 1})
            .get_document("details")
            .unwrap(),
        &doc! {"operatorName": "$ne", "specifiedAs": {"a": {"$ne": 1}}, "reason": "comparison succeeded", "consideredValue": 1}
    );
}

#[test]
fn considered_values_are_cut_at_ten() {
    let v = validator(doc! {"validator": {"a": {"$gt": 100}}});
    let many: Vec<i32> = (0..12).collect();
    let details = v
        .error_info(&doc! {"_id": 1, "a": many})
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(details.get_array("consideredValues").unwrap().len(), 10);
    assert!(details.get_bool("consideredValuesTruncated").unwrap());
}

#[test]
fn json_schema_keywords() {
    let v = validator(doc! {"validator": {"$jsonSchema": {
        "properties": {
            "s": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^a"},
            "n": {"bsonType": "number", "minimum": 0, "exclusiveMinimum": true, "multipleOf": 2},
            "t": {"type": "array", "items": {"bsonType": "int"}, "minItems": 1, "uniqueItems": true},
            "e": {"enum": ["x", {"k": 1, "j": 2}]},
            "o": {"bsonType": "object", "additionalProperties": false, "properties": {"p": {}}},
        },
        "minProperties": 1,
        "dependencies": {"s": ["n"]},
        "oneOf": [{"required": ["s"]}, {"required": ["t"]}],
        "not": {"required": ["forbidden"]},
    }}});
    let ok = |d: Document| v.admits(&d);
    assert!(ok(doc! {"s": "ab", "n": 4}));
    assert!(!ok(doc! {"s": "a", "n": 4}), "minLength");
    assert!(!ok(doc! {"s": "abcd", "n": 4}), "maxLength");
    assert!(!ok(doc! {"s": "bb", "n": 4}), "pattern");
    assert!(!ok(doc! {"s": "ab", "n": 0}), "exclusiveMinimum");
    assert!(!ok(doc! {"s": "ab", "n": 3}), "multipleOf");
    assert!(!ok(doc! {"s": "ab"}), "dependencies");
    assert!(ok(doc! {"t": [1, 2]}));
    assert!(!ok(doc! {"t": [1, 1]}), "uniqueItems");
    assert!(!ok(doc! {"t": []}), "minItems");
    assert!(!ok(doc! {"t": [1, "x"]}), "items");
    assert!(!ok(doc! {"t": [1], "s": "ab", "n": 2}), "oneOf: both");
    assert!(!ok(doc! {"x": 1}), "oneOf: neither");
    assert!(!ok(doc! {"t": [1], "forbidden": 1}), "not");
    assert!(
        ok(doc! {"t": [1], "e": {"j": 2, "k": 1.0}}),
        "enum ignores field order"
    );
    assert!(!ok(doc! {"t": [1], "e": "y"}), "enum");
    assert!(
        !ok(doc! {"t": [1], "o": {"p": 1, "q": 2}}),
        "additionalProperties"
    );
    let info = v.error_info(&doc! {"_id": 3, "t": [1], "o": {"p": 1, "q": 2}});
    let rules = info
        .get_document("details")
        .unwrap()
        .get_array("schemaRulesNotSatisfied")
        .unwrap()
        .clone();
    assert_eq!(
        rules[0],
        Bson::Document(
            doc! {"operatorName": "properties", "propertiesNotSatisfied": [{
                "propertyName": "o",
                "details": [{"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": false}, "additionalProperties": ["q"]}],
            }]}
        )
    );
}

#[test]
fn options_are_checked() {
    let error = |options: Document| CollectionValidator::from_options(&options).unwrap_err();
    assert_eq!(
        error(doc! {"validator": {"$jsonSchema": {"$ref": "#/x"}}}).code,
        9
    );
    assert_eq!(
        error(doc! {"validator": {"$jsonSchema": {"bogus": 1}}}).code,
        9
    );
    assert_eq!(
        error(doc! {"validator": {"$jsonSchema": {"type": "object", "bsonType": "object"}}}).code,
        9
    );
    assert_eq!(
        error(doc! {"validator": {"$jsonSchema": {"type": "integer"}}}).code,
        2
    );
    assert_eq!(
        error(doc! {"validator": {"$jsonSchema": {"required": []}}}).code,
        2
    );
    assert_eq!(error(doc! {"validator": {"$where": "true"}}).code, 224);
    assert_eq!(
        error(doc! {"validator": {"a": {"$near": [0, 0]}}}).code,
        224
    );
    assert_eq!(
        error(doc! {"validator": {"a": 1}, "validationLevel": "lax"}).code,
        2
    );
    assert_eq!(
        error(doc! {"validator": {"a": 1}, "validationAction": 1}).code,
        14
    );
    assert!(CollectionValidator::from_options(&doc! {"validator": {}})
        .unwrap()
        .is_none());
    assert!(CollectionValidator::from_options(
        &doc! {"validator": {"a": 1}, "validationLevel": "off"}
    )
    .unwrap()
    .is_none());
}

#[test]
fn json_schema_is_a_query_operator() {
    let filter = Filter::parse(
        &doc! {"$jsonSchema": {"required": ["a"], "properties": {"a": {"bsonType": "int"}}}},
    )
    .unwrap();
    assert!(filter.matches(&doc! {"a": 1}));
    assert!(!filter.matches(&doc! {"a": "1"}));
    assert!(!filter.matches(&doc! {"b": 1}));
}
