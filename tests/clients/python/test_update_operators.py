"""Every update operator through pymongo against the real server, with MongoDB's
documented results (manual pages of each operator) and its error codes: 66 ImmutableField,
40 ConflictingUpdateOperators, 14 TypeMismatch, 9 FailedToParse, 2 BadValue. Also
matched/modified counts as MongoDB reports them, upsert seeding, findAndModify and ordered
and unordered bulk writes."""

import datetime

import pytest
from bson import Int64, Timestamp
from bson.decimal128 import Decimal128
from pymongo import ReturnDocument, UpdateOne, InsertOne, DeleteOne
from pymongo.errors import BulkWriteError, OperationFailure, WriteError


def after(coll, update, doc, **kwargs):
    """Inserts `doc`, applies `update` to it, returns the stored result."""
    coll.insert_one(doc)
    coll.update_one({"_id": doc["_id"]}, update, **kwargs)
    return coll.find_one({"_id": doc["_id"]})


def test_set_creates_nested_paths_and_grows_arrays_with_nulls(coll):
    got = after(coll, {"$set": {"a.b.c": 1, "arr.3": "x"}}, {"_id": 1, "arr": [0]})
    assert got == {"_id": 1, "arr": [0, None, None, "x"], "a": {"b": {"c": 1}}}


def test_unset_removes_fields_and_nulls_array_elements(coll):
    got = after(coll, {"$unset": {"x": "", "arr.1": ""}}, {"_id": 1, "x": 1, "arr": [1, 2, 3]})
    assert got == {"_id": 1, "arr": [1, None, 3]}


def test_inc_and_mul_keep_mongodb_number_types(coll):
    got = after(
        coll,
        {"$inc": {"i": 1, "l": Int64(1), "d": 0.5}, "$mul": {"m": 3, "z": 2}},
        {"_id": 1, "i": 1, "l": Int64(5), "d": 1.0, "m": 2},
    )
    assert got == {"_id": 1, "i": 2, "l": Int64(6), "d": 1.5, "m": 6, "z": 0}
    assert isinstance(got["l"], Int64)


def test_min_and_max_compare_across_types(coll):
    got = after(coll, {"$min": {"lo": 3}, "$max": {"hi": 20, "new": 7}}, {"_id": 1, "lo": 5, "hi": 10})
    assert got == {"_id": 1, "lo": 3, "hi": 20, "new": 7}


def test_rename_moves_the_value(coll):
    got = after(coll, {"$rename": {"old": "renamed.inner"}}, {"_id": 1, "old": 42})
    assert got == {"_id": 1, "renamed": {"inner": 42}}


def test_current_date_as_date_and_timestamp(coll):
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(seconds=5)
    got = after(coll, {"$currentDate": {"d": True, "t": {"$type": "timestamp"}}}, {"_id": 1})
    assert isinstance(got["d"], datetime.datetime) and got["d"] >= before
    assert isinstance(got["t"], Timestamp)


def test_set_on_insert_applies_only_on_upsert_insert(coll):
    coll.update_one({"_id": 1}, {"$set": {"a": 1}, "$setOnInsert": {"created": True}}, upsert=True)
    coll.update_one({"_id": 1}, {"$set": {"a": 2}, "$setOnInsert": {"created": False}}, upsert=True)
    assert coll.find_one({"_id": 1}) == {"_id": 1, "a": 2, "created": True}


def test_push_with_each_position_slice_and_sort(coll):
    got = after(
        coll,
        {"$push": {"s": {"$each": [{"v": 5}, {"v": 1}, {"v": 3}], "$sort": {"v": 1}, "$slice": 3}}},
        {"_id": 1, "s": [{"v": 4}, {"v": 2}]},
    )
    assert got["s"] == [{"v": 1}, {"v": 2}, {"v": 3}]
    got = after(coll, {"$push": {"p": {"$each": ["x", "y"], "$position": 1}}}, {"_id": 2, "p": ["a", "b"]})
    assert got["p"] == ["a", "x", "y", "b"]


def test_add_to_set_with_each_skips_existing_values(coll):
    got = after(coll, {"$addToSet": {"t": {"$each": ["a", "c", "a"]}}}, {"_id": 1, "t": ["a", "b"]})
    assert got["t"] == ["a", "b", "c"]


def test_pop_first_and_last(coll):
    got = after(coll, {"$pop": {"f": -1, "l": 1}}, {"_id": 1, "f": [1, 2, 3], "l": [1, 2, 3]})
    assert (got["f"], got["l"]) == ([2, 3], [1, 2])


def test_pull_values_and_conditions_and_pull_all(coll):
    got = after(
        coll,
        {"$pull": {"n": {"$gte": 5}, "d": {"k": "x"}}, "$pullAll": {"s": ["a", "b"]}},
        {"_id": 1, "n": [1, 5, 7, 3], "d": [{"k": "x"}, {"k": "y"}], "s": ["a", "b", "c", "a"]},
    )
    assert (got["n"], got["d"], got["s"]) == ([1, 3], [{"k": "y"}], ["c"])


def test_bit_and_or_xor(coll):
    got = after(coll, {"$bit": {"a": {"and": 10}, "o": {"or": 5}, "x": {"xor": 5}}}, {"_id": 1, "a": 13, "o": 8, "x": 12})
    assert (got["a"], got["o"], got["x"]) == (8, 13, 9)


def test_positional_all_and_filtered_operators(coll):
    coll.insert_one({"_id": 1, "g": [{"s": 1}, {"s": 5}, {"s": 9}], "h": [1, 2, 3]})
    coll.update_one({"_id": 1, "g.s": 5}, {"$set": {"g.$.hit": True}})
    coll.update_one({"_id": 1}, {"$inc": {"h.$[]": 10}})
    coll.update_one({"_id": 1}, {"$set": {"g.$[big].big": True}}, array_filters=[{"big.s": {"$gt": 4}}])
    assert coll.find_one({"_id": 1}) == {
        "_id": 1,
        "g": [{"s": 1}, {"s": 5, "hit": True, "big": True}, {"s": 9, "big": True}],
        "h": [11, 12, 13],
    }


def test_pipeline_update(coll):
    got = after(coll, [{"$set": {"total": {"$add": ["$a", "$b"]}}}, {"$unset": "a"}], {"_id": 1, "a": 2, "b": 3})
    assert got == {"_id": 1, "b": 3, "total": 5}


def test_no_op_update_matches_but_does_not_modify(coll):
    coll.insert_one({"_id": 1, "a": 1})
    result = coll.update_one({"_id": 1}, {"$set": {"a": 1}})
    assert (result.matched_count, result.modified_count) == (1, 0)


def test_upsert_seeds_equality_fields_and_reports_the_id(coll):
    result = coll.update_one({"k": "key", "n": {"$gt": 1}, "nested.x": 5}, {"$set": {"v": 1}}, upsert=True)
    assert result.upserted_id is not None
    got = coll.find_one({"_id": result.upserted_id})
    assert got == {"_id": result.upserted_id, "k": "key", "nested": {"x": 5}, "v": 1}


@pytest.mark.parametrize(
    "update,code",
    [
        ({"$set": {"_id": 2}}, 66),  # ImmutableField
        ({"$set": {"a": 1}, "$inc": {"a": 1}}, 40),  # ConflictingUpdateOperators
        ({"$set": {"a.b": 1}, "$unset": {"a": ""}}, 40),
        ({"$inc": {"s": 1}}, 14),  # TypeMismatch: $inc on a string
        ({"$push": {"s": 1}}, 2),  # BadValue: $push onto a non-array
        ({"$foo": {"a": 1}}, 9),  # FailedToParse: unknown modifier
        ({"$set": {"a": 1}, "plain": 1}, 9),  # mixing operators and fields
    ],
)
def test_update_errors_change_nothing(coll, update, code):
    coll.insert_one({"_id": 1, "s": "text", "a": {"x": 1}})
    with pytest.raises(WriteError) as excinfo:
        coll.update_one({"_id": 1}, update)
    assert excinfo.value.code == code, excinfo.value.details
    assert coll.find_one({"_id": 1}) == {"_id": 1, "s": "text", "a": {"x": 1}}


def test_replacement_cannot_change_id(coll):
    coll.insert_one({"_id": 1, "a": 1})
    with pytest.raises(WriteError) as excinfo:
        coll.replace_one({"_id": 1}, {"_id": 2, "a": 2})
    assert excinfo.value.code == 66


def test_update_many_failing_half_way_writes_nothing(coll):
    coll.insert_many([{"_id": i, "n": i} for i in range(5)] + [{"_id": 5, "n": "text"}] + [{"_id": 6, "n": 6}])
    with pytest.raises(WriteError):
        coll.update_many({}, {"$inc": {"n": 100}})
    assert [d["n"] for d in coll.find().sort("_id", 1)] == [0, 1, 2, 3, 4, "text", 6]


def test_find_one_and_update_returns_before_and_after(coll):
    coll.insert_one({"_id": 1, "n": 1})
    before = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}})
    later = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER, projection={"_id": 0})
    assert (before, later) == ({"_id": 1, "n": 1}, {"n": 3})
    assert coll.find_one_and_update({"_id": 9}, {"$set": {"x": 1}}) is None


def test_find_and_modify_argument_errors(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as excinfo:
        db.command("findAndModify", "c", query={"_id": 1}, remove=True, update={"$set": {"a": 1}})
    assert excinfo.value.code == 9


def test_ordered_bulk_stops_at_the_first_error(coll):
    coll.insert_one({"_id": 1})
    with pytest.raises(BulkWriteError) as excinfo:
        coll.bulk_write([InsertOne({"_id": 2}), InsertOne({"_id": 1}), InsertOne({"_id": 3})])
    details = excinfo.value.details
    assert details["nInserted"] == 1
    assert [e["index"] for e in details["writeErrors"]] == [1]
    assert sorted(d["_id"] for d in coll.find()) == [1, 2]


def test_unordered_bulk_carries_on(coll):
    coll.insert_one({"_id": 1, "n": 0})
    with pytest.raises(BulkWriteError) as excinfo:
        coll.bulk_write(
            [
                InsertOne({"_id": 1}),
                UpdateOne({"_id": 1}, {"$inc": {"n": 1}}),
                InsertOne({"_id": 2}),
                UpdateOne({"_id": 2}, {"$inc": {"n": "x"}}),
                DeleteOne({"_id": 99}),
            ],
            ordered=False,
        )
    details = excinfo.value.details
    # index 0: duplicate _id (11000); index 3: $inc with a non-numeric argument (14).
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(0, 11000), (3, 14)]
    assert (details["nInserted"], details["nMatched"], details["nModified"]) == (1, 1, 1)
    assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 1}


def test_decimal_arithmetic_stays_decimal(coll):
    got = after(coll, {"$inc": {"d": Decimal128("0.20")}}, {"_id": 1, "d": Decimal128("0.10")})
    assert got["d"] == Decimal128("0.30")
