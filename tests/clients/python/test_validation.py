"""Schema validation as a pymongo application sees it, with expectations from MongoDB's manual
("Schema Validation", "Specify JSON Schema Validation", "Handle Invalid Documents", "Bypass
Schema Validation", "Specify Validation Level for Existing Documents"):

- `create` with `validator` ($jsonSchema or query operators), `validationLevel` and
  `validationAction`, shown back by listCollections;
- every write path refuses an invalid document with 121 DocumentValidationFailure and
  MongoDB 7.0's `errInfo` (`failingDocumentId`, `details`): insert (ordered and unordered),
  update (operators, replacement, pipeline, upsert), findAndModify, $out and $merge;
- `moderate` lets updates of already-invalid documents through, `warn` logs and writes,
  `bypassDocumentValidation` skips validation and needs its privilege (13 without it);
- `$jsonSchema` is also a query operator; MongoDB's refusals at `create`.
"""

from __future__ import annotations

import pytest
from bson import ObjectId
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

from conftest import DocgateServer

STUDENTS = {
    "$jsonSchema": {
        "bsonType": "object",
        "title": "Student Object Validation",
        "required": ["address", "major", "name", "year"],
        "properties": {
            "name": {"bsonType": "string", "description": "'name' must be a string and is required"},
            "year": {
                "bsonType": "int",
                "minimum": 2017,
                "maximum": 3017,
                "description": "'year' must be an integer in [ 2017, 3017 ] and is required",
            },
            "gpa": {"bsonType": ["double"], "description": "'gpa' must be a double if the field exists"},
        },
    }
}

VALID_STUDENT = {"name": "Alice", "year": 2019, "major": "History", "address": {"city": "NYC"}, "gpa": 3.5}


@pytest.fixture
def students(db):
    db.create_collection("students", validator=STUDENTS)
    return db["students"]


def test_create_shows_validation_options(db, students):
    info = next(db.list_collections(filter={"name": "students"}))
    assert info["options"] == {
        "validator": STUDENTS,
        "validationLevel": "strict",
        "validationAction": "error",
    }


def test_insert_failure_has_mongodb_errinfo(students):
    # The manual's example: gpa is an int, not a double, and address is missing.
    with pytest.raises(WriteError) as failure:
        students.insert_one({"_id": 1, "name": "Alice", "year": 2019, "major": "History", "gpa": 3})
    error = failure.value
    assert error.code == 121
    assert error.details["errmsg"] == "Document failed validation"
    info = error.details["errInfo"]
    assert info["failingDocumentId"] == 1
    details = info["details"]
    assert details["operatorName"] == "$jsonSchema"
    assert details["title"] == "Student Object Validation"
    assert details["schemaRulesNotSatisfied"] == [
        {
            "operatorName": "properties",
            "propertiesNotSatisfied": [
                {
                    "propertyName": "gpa",
                    "description": "'gpa' must be a double if the field exists",
                    "details": [
                        {
                            "operatorName": "bsonType",
                            "specifiedAs": {"bsonType": ["double"]},
                            "reason": "type did not match",
                            "consideredValue": 3,
                            "consideredType": "int",
                        }
                    ],
                }
            ],
        },
        {
            "operatorName": "required",
            "specifiedAs": {"required": ["address", "major", "name", "year"]},
            "missingProperties": ["address"],
        },
    ]
    assert students.count_documents({}) == 0
    students.insert_one(dict(VALID_STUDENT))
    assert students.count_documents({}) == 1


def test_failing_document_id_is_the_generated_objectid(students):
    with pytest.raises(WriteError) as failure:
        students.insert_one({"name": 5})
    assert isinstance(failure.value.details["errInfo"]["failingDocumentId"], ObjectId)


def test_insert_many_ordered_and_unordered(db, students):
    good = lambda n: {**VALID_STUDENT, "_id": n}  # noqa: E731
    with pytest.raises(BulkWriteError) as failure:
        students.insert_many([good(1), {"_id": 2, "name": "x"}, good(3)])
    result = failure.value.details
    assert result["nInserted"] == 1
    assert [(e["index"], e["code"]) for e in result["writeErrors"]] == [(1, 121)]
    assert result["writeErrors"][0]["errInfo"]["failingDocumentId"] == 2

    with pytest.raises(BulkWriteError) as failure:
        students.insert_many([{"_id": 4}, good(5), {"_id": 6}, good(7)], ordered=False)
    result = failure.value.details
    assert result["nInserted"] == 2
    assert [(e["index"], e["code"]) for e in result["writeErrors"]] == [(0, 121), (2, 121)]
    assert sorted(d["_id"] for d in students.find()) == [1, 5, 7]


def test_updates_are_validated_after_the_update(students):
    students.insert_one({**VALID_STUDENT, "_id": 1})
    for attempt in (
        lambda: students.update_one({"_id": 1}, {"$set": {"year": 1999}}),
        lambda: students.update_one({"_id": 1}, {"$unset": {"major": ""}}),
        lambda: students.replace_one({"_id": 1}, {"name": "Bob"}),
        lambda: students.update_one({"_id": 1}, [{"$set": {"gpa": "A"}}]),
        lambda: students.update_one({"_id": 9}, {"$set": {"name": "new"}}, upsert=True),
        lambda: students.update_many({}, {"$set": {"name": 1}}),
    ):
        with pytest.raises(WriteError) as failure:
            attempt()
        assert failure.value.code == 121
    assert students.find_one({"_id": 1}) == {**VALID_STUDENT, "_id": 1}
    assert students.count_documents({}) == 1
    # A valid update and a valid upsert go through.
    assert students.update_one({"_id": 1}, {"$set": {"year": 2020}}).modified_count == 1
    students.update_one({"_id": 2}, {"$set": {k: v for k, v in VALID_STUDENT.items()}}, upsert=True)
    assert students.count_documents({}) == 2


def test_update_failure_details(students):
    students.insert_one({**VALID_STUDENT, "_id": 1})
    with pytest.raises(WriteError) as failure:
        students.update_one({"_id": 1}, {"$set": {"year": 1999}})
    details = failure.value.details["errInfo"]["details"]
    assert details["schemaRulesNotSatisfied"] == [
        {
            "operatorName": "properties",
            "propertiesNotSatisfied": [
                {
                    "propertyName": "year",
                    "description": "'year' must be an integer in [ 2017, 3017 ] and is required",
                    "details": [
                        {
                            "operatorName": "minimum",
                            "specifiedAs": {"minimum": 2017},
                            "reason": "comparison failed",
                            "consideredValue": 1999,
                        }
                    ],
                }
            ],
        }
    ]


def test_find_and_modify_is_validated(students):
    students.insert_one({**VALID_STUDENT, "_id": 1})
    with pytest.raises(OperationFailure) as failure:
        students.find_one_and_update({"_id": 1}, {"$set": {"name": 42}})
    assert failure.value.code == 121
    assert failure.value.details["codeName"] == "DocumentValidationFailure"
    assert failure.value.details["errInfo"]["failingDocumentId"] == 1
    with pytest.raises(OperationFailure) as failure:
        students.find_one_and_replace({"_id": 1}, {"name": "only"})
    assert failure.value.code == 121
    doc = students.find_one_and_update(
        {"_id": 1}, {"$set": {"name": 42}}, bypassDocumentValidation=True, return_document=True
    )
    assert doc["name"] == 42


def test_query_operator_validator_details(db):
    db.create_collection("orders", validator={"qty": {"$gt": 0}, "status": {"$in": ["A", "B"]}})
    orders = db["orders"]
    orders.insert_one({"qty": 2, "status": "A"})
    with pytest.raises(WriteError) as failure:
        orders.insert_one({"_id": 7, "qty": 0, "status": "A"})
    assert failure.value.details["errInfo"] == {
        "failingDocumentId": 7,
        "details": {
            "operatorName": "$and",
            "clausesNotSatisfied": [
                {
                    "index": 0,
                    "details": {
                        "operatorName": "$gt",
                        "specifiedAs": {"qty": {"$gt": 0}},
                        "reason": "comparison failed",
                        "consideredValue": 0,
                    },
                }
            ],
        },
    }
    with pytest.raises(WriteError) as failure:
        orders.insert_one({"_id": 8, "qty": 1})
    clause = failure.value.details["errInfo"]["details"]["clausesNotSatisfied"][0]
    assert clause == {
        "index": 1,
        "details": {
            "operatorName": "$in",
            "specifiedAs": {"status": {"$in": ["A", "B"]}},
            "reason": "field was missing",
        },
    }


def test_expr_validator(db):
    db.create_collection("prices", validator={"$expr": {"$lt": ["$discount", "$price"]}})
    prices = db["prices"]
    prices.insert_one({"price": 10, "discount": 2})
    with pytest.raises(WriteError) as failure:
        prices.insert_one({"_id": 1, "price": 10, "discount": 20})
    assert failure.value.details["errInfo"]["details"] == {
        "operatorName": "$expr",
        "specifiedAs": {"$expr": {"$lt": ["$discount", "$price"]}},
        "reason": "expression did not match",
        "expressionResult": False,
    }


def test_moderate_level_lets_invalid_documents_be_updated(db):
    rule = {"$jsonSchema": {"required": ["name"], "properties": {"name": {"bsonType": "string"}}}}
    for level, allowed in (("moderate", True), ("strict", False)):
        db.create_collection(f"c_{level}", validator=rule, validationLevel=level)
        coll = db[f"c_{level}"]
        coll.insert_one({"_id": "old", "name": 1}, bypass_document_validation=True)
        coll.insert_one({"_id": "ok", "name": "a"})
        # An update of a document that already failed the validator.
        if allowed:
            coll.update_one({"_id": "old"}, {"$set": {"other": 1}})
            assert coll.find_one({"_id": "old"})["other"] == 1
        else:
            with pytest.raises(WriteError) as failure:
                coll.update_one({"_id": "old"}, {"$set": {"other": 1}})
            assert failure.value.code == 121
        # A valid document may not become invalid, and inserts are always checked.
        with pytest.raises(WriteError):
            coll.update_one({"_id": "ok"}, {"$set": {"name": 2}})
        with pytest.raises(WriteError):
            coll.insert_one({"name": 3})
    info = next(db.list_collections(filter={"name": "c_moderate"}))
    assert info["options"]["validationLevel"] == "moderate"


def test_level_off_and_empty_validator_do_not_validate(db):
    db.create_collection("off", validator={"a": {"$exists": True}}, validationLevel="off")
    db["off"].insert_one({"b": 1})
    db.create_collection("empty", validator={})
    db["empty"].insert_one({"b": 1})
    assert db["off"].count_documents({}) == db["empty"].count_documents({}) == 1


def test_warn_action_writes_and_logs(server, db):
    db.create_collection("warned", validator={"a": {"$type": "int"}}, validationAction="warn")
    db["warned"].insert_one({"_id": "w1", "a": "text"})
    assert db["warned"].find_one({"_id": "w1"}) == {"_id": "w1", "a": "text"}
    log = server.log_path.read_text(errors="replace")
    assert "Document would fail validation" in log
    assert "w1" in log


def test_bypass_document_validation(students):
    students.insert_one({"_id": 1, "name": 5}, bypass_document_validation=True)
    students.insert_many([{"_id": 2}, {"_id": 3}], bypass_document_validation=True)
    students.update_one({"_id": 1}, {"$set": {"year": 1}}, bypass_document_validation=True)
    students.replace_one({"_id": 2}, {"x": 1}, bypass_document_validation=True)
    assert students.count_documents({}) == 3
    assert students.find_one({"_id": 1}) == {"_id": 1, "name": 5, "year": 1}


def test_out_and_merge_into_validated_collection(db, students):
    source = db["source"]
    source.insert_many([{"_id": 1, "name": "x"}])
    for stage in ({"$out": "students"}, {"$merge": {"into": "students"}}):
        with pytest.raises(OperationFailure) as failure:
            list(source.aggregate([stage]))
        assert failure.value.code == 121
        assert students.count_documents({}) == 0
    list(source.aggregate([{"$merge": {"into": "students"}}], bypassDocumentValidation=True))
    assert students.count_documents({}) == 1
    # $out keeps the target's validator.
    list(source.aggregate([{"$out": "students"}], bypassDocumentValidation=True))
    info = next(db.list_collections(filter={"name": "students"}))
    assert info["options"]["validator"] == STUDENTS


def test_json_schema_query_operator(db):
    coll = db["people"]
    coll.insert_many([{"_id": 1, "age": 30}, {"_id": 2, "age": "thirty"}, {"_id": 3}])
    schema = {"$jsonSchema": {"required": ["age"], "properties": {"age": {"bsonType": "int"}}}}
    assert [d["_id"] for d in coll.find(schema)] == [1]
    assert coll.count_documents({"$nor": [schema]}) == 2
    assert [d["_id"] for d in coll.aggregate([{"$match": schema}])] == [1]


@pytest.mark.parametrize(
    "options, code",
    [
        ({"validator": {"$jsonSchema": {"$ref": "#/definitions/a"}}}, 9),
        ({"validator": {"$jsonSchema": {"format": "email"}}}, 9),
        ({"validator": {"$jsonSchema": {"unknownKeyword": 1}}}, 9),
        ({"validator": {"$jsonSchema": {"type": "object", "bsonType": "object"}}}, 9),
        ({"validator": {"$jsonSchema": {"type": "integer"}}}, 2),
        ({"validator": {"$jsonSchema": {"required": []}}}, 2),
        ({"validator": {"$jsonSchema": 1}}, 14),
        ({"validator": {"$where": "this.a > 1"}}, 224),
        ({"validator": {"$text": {"$search": "x"}}}, 224),
        ({"validator": {"loc": {"$near": [0, 0]}}}, 224),
        ({"validator": {"a": {"$unknownOp": 1}}}, 2),
        ({"validator": 5}, 14),
        ({"validator": {"a": 1}, "validationLevel": "sometimes"}, 2),
        ({"validator": {"a": 1}, "validationAction": "errorAndLog"}, 2),
    ],
)
def test_create_refuses_invalid_validators(db, options, code):
    with pytest.raises(OperationFailure) as failure:
        db.command("create", "bad", **options)
    assert failure.value.code == code
    assert "bad" not in db.list_collection_names()


def test_bypass_needs_its_privilege(tmp_path_factory):
    srv = DocgateServer(tmp_path_factory.mktemp("bypass"), fresh_storage=True)
    srv.start()
    try:
        with srv.client() as anon:
            anon.admin.command("createUser", "root1", pwd="root1-pwd", roles=["root"])
        with srv.client(username="root1", password="root1-pwd") as root:
            root.shop.create_collection("items", validator={"a": {"$type": "int"}})
            root.shop.command("createUser", "writer", pwd="writer-pwd", roles=["readWrite"])
            root.shop.command("createUser", "admin", pwd="admin-pwd", roles=["readWrite", "dbAdmin"])
        with srv.client(username="writer", password="writer-pwd", authSource="shop") as writer:
            items = writer.shop["items"]
            items.insert_one({"a": 1})
            with pytest.raises(OperationFailure) as failure:
                items.insert_one({"a": "x"}, bypass_document_validation=True)
            assert failure.value.code == 13
            with pytest.raises(OperationFailure) as failure:
                items.update_one({"a": 1}, {"$set": {"a": "x"}}, bypass_document_validation=True)
            assert failure.value.code == 13
            with pytest.raises(WriteError) as failure:
                items.insert_one({"a": "x"})
            assert failure.value.code == 121
        with srv.client(username="admin", password="admin-pwd", authSource="shop") as admin:
            admin.shop["items"].insert_one({"a": "x"}, bypass_document_validation=True)
            assert admin.shop["items"].count_documents({}) == 2
    finally:
        srv.stop()


def test_coll_mod_adds_changes_and_removes_a_validator(db):
    # The manual's "Modify a Collection's Validation Rules": collMod sets the validator of an
    # existing collection, later writes are checked, and `validator: {}` removes it.
    people = db["people_mod"]
    people.insert_one({"_id": 1, "name": "no age"})
    db.command("collMod", "people_mod", validator={"age": {"$gte": 0}})
    info = next(db.list_collections(filter={"name": "people_mod"}))
    assert info["options"]["validator"] == {"age": {"$gte": 0}}
    assert info["options"]["validationLevel"] == "strict"
    with pytest.raises(WriteError) as refused:
        people.insert_one({"_id": 2, "age": -1})
    assert refused.value.code == 121
    people.insert_one({"_id": 3, "age": 30})

    # moderate: an update of a document that was already invalid goes through.
    db.command("collMod", "people_mod", validationLevel="moderate")
    people.update_one({"_id": 1}, {"$set": {"name": "still no age"}})
    assert people.find_one({"_id": 1})["name"] == "still no age"

    # A bad setting changes nothing.
    with pytest.raises(OperationFailure):
        db.command("collMod", "people_mod", validationAction="shout")
    info = next(db.list_collections(filter={"name": "people_mod"}))
    assert info["options"]["validationAction"] == "error"

    db.command("collMod", "people_mod", validator={})
    people.insert_one({"_id": 4, "age": -5})
    assert people.count_documents({}) == 3
    info = next(db.list_collections(filter={"name": "people_mod"}))
    assert "validator" not in info["options"]


def test_coll_mod_validator_on_a_missing_collection_is_26(db):
    with pytest.raises(OperationFailure) as missing:
        db.command("collMod", "nowhere", validator={"a": {"$exists": True}})
    assert missing.value.code == 26
