"""CRUD through pymongo: inserts, queries, cursors, updates, deletes, counts and write errors.

Expected results are MongoDB's documented behaviour (the server manual), not
whatever docgate happens to do.
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import ObjectId
from pymongo import (
    ASCENDING,
    DESCENDING,
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    ReturnDocument,
    UpdateMany,
    UpdateOne,
    monitoring,
)
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, WriteError

# --------------------------------------------------------------------------- inserts


def test_insert_one_generates_object_id(coll):
    result = coll.insert_one({"name": "ann"})
    assert result.acknowledged
    assert isinstance(result.inserted_id, ObjectId)
    assert coll.find_one({"_id": result.inserted_id}) == {"_id": result.inserted_id, "name": "ann"}


def test_dollar_prefixed_fields_inside_id_are_refused(coll):
    # MongoDB's storage rule: 52 DollarPrefixedFieldName, at any depth of _id; nothing stored.
    for bad in ({"$a": 1}, {"b": {"$a": 1}}, {"b": [{"$a": 1}]}):
        with pytest.raises(WriteError) as failure:
            coll.insert_one({"_id": bad})
        assert failure.value.code == 52
        with pytest.raises(WriteError) as failure:
            coll.replace_one({"x": 1}, {"_id": bad}, upsert=True)
        assert failure.value.code == 52
    assert coll.count_documents({}) == 0
    # Elsewhere in the document MongoDB 5.0+ stores $-prefixed field names.
    coll.insert_one({"_id": {"a": 1}, "x": {"$b": 1}})
    assert coll.find_one({"_id": {"a": 1}}) == {"_id": {"a": 1}, "x": {"$b": 1}}


def test_insert_one_keeps_given_id(coll):
    result = coll.insert_one({"_id": "custom-id", "n": 1})
    assert result.inserted_id == "custom-id"
    assert coll.find_one({"_id": "custom-id"}) == {"_id": "custom-id", "n": 1}


def test_insert_many_generates_ids_in_order(coll):
    docs = [{"i": i} for i in range(5)]
    result = coll.insert_many(docs)
    assert len(result.inserted_ids) == 5
    assert all(isinstance(i, ObjectId) for i in result.inserted_ids)
    assert len(set(result.inserted_ids)) == 5
    got = {d["_id"]: d["i"] for d in coll.find()}
    assert got == {oid: i for i, oid in enumerate(result.inserted_ids)}


def test_id_is_stored_first(coll):
    # MongoDB moves _id to the front of a stored document.
    coll.insert_one({"a": 1, "_id": 7, "b": 2})
    assert list(coll.find_one({"_id": 7}).keys()) == ["_id", "a", "b"]


# --------------------------------------------------------------------------- queries

PEOPLE = [
    {
        "_id": 1,
        "name": "ann",
        "age": 31,
        "tags": ["a", "b"],
        "addr": {"city": "Oslo", "zip": "0150"},
        "items": [{"sku": "x", "qty": 5}, {"sku": "y", "qty": 1}],
    },
    {
        "_id": 2,
        "name": "bob",
        "age": 25,
        "tags": ["b"],
        "addr": {"city": "Bergen"},
        "items": [{"sku": "x", "qty": 2}],
    },
    {"_id": 3, "name": "cid", "age": 40, "tags": [], "addr": {"city": "Oslo"}, "nick": None},
    {"_id": 4, "name": "dee", "age": "unknown"},
    {"_id": 5, "name": "eve", "age": 25.0, "nick": "e"},
]


@pytest.fixture
def people(coll):
    coll.insert_many(PEOPLE)
    return coll


@pytest.mark.parametrize(
    "flt, expected",
    [
        ({}, [1, 2, 3, 4, 5]),
        ({"name": "bob"}, [2]),
        ({"name": "nobody"}, []),
        ({"age": 25}, [2, 5]),  # an int matches an equal double
        ({"age": {"$gt": 30}}, [1, 3]),  # no string ages: comparisons stay within a type
        ({"age": {"$lt": 30}}, [2, 5]),
        ({"age": {"$gte": 25, "$lte": 31}}, [1, 2, 5]),
        ({"age": {"$ne": 25}}, [1, 3, 4]),
        ({"name": {"$in": ["ann", "eve", "zed"]}}, [1, 5]),
        ({"name": {"$nin": ["ann", "bob"]}}, [3, 4, 5]),
        ({"$and": [{"addr.city": "Oslo"}, {"age": {"$gt": 35}}]}, [3]),
        ({"$or": [{"name": "ann"}, {"age": "unknown"}]}, [1, 4]),
        ({"nick": {"$exists": True}}, [3, 5]),  # a null value exists
        ({"nick": {"$exists": False}}, [1, 2, 4]),
        ({"nick": None}, [1, 2, 3, 4]),  # null matches null and missing
        ({"addr.city": "Oslo"}, [1, 3]),
        ({"addr": {"city": "Oslo"}}, [3]),  # whole-document equality
        ({"addr.zip": {"$exists": True}}, [1]),
        ({"tags": "b"}, [1, 2]),  # equality matches an array element
        ({"tags": []}, [3]),
        ({"tags": ["a", "b"]}, [1]),
        ({"items.sku": "x"}, [1, 2]),
        ({"items.qty": {"$gt": 4}}, [1]),
        ({"name": {"$regex": "^[ab]"}}, [1, 2]),
        ({"name": {"$regex": "^A", "$options": "i"}}, [1]),
        ({"$nor": [{"addr.city": "Oslo"}, {"age": 25}]}, [4]),
        ({"age": {"$not": {"$gt": 30}}}, [2, 4, 5]),  # $not also matches non-numbers
        ({"tags": {"$all": ["a", "b"]}}, [1]),
        ({"tags": {"$size": 1}}, [2]),
        ({"items": {"$elemMatch": {"sku": "x", "qty": {"$gt": 3}}}}, [1]),
        ({"items.sku": "y", "items.qty": 2}, []),  # no $elemMatch: conditions on any elements...
        ({"items.sku": "x", "items.qty": 1}, [1]),  # ...so these two match different elements of 1
        ({"age": {"$type": "string"}}, [4]),
        ({"age": {"$type": "number"}}, [1, 2, 3, 5]),
        ({"age": {"$mod": [5, 0]}}, [2, 3, 5]),
        ({"age": {"$exists": True, "$gte": 31}}, [1, 3]),
        ({"_id": {"$in": [2, 4, 99]}}, [2, 4]),
        ({"_id": {"$gt": 3}}, [4, 5]),
    ],
    ids=repr,
)
def test_find_filters(people, flt, expected):
    got = [d["_id"] for d in people.find(flt).sort("_id", ASCENDING)]
    assert got == expected


def test_find_dates_compare_by_time(coll):
    base = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
    coll.insert_many([{"_id": i, "at": base + datetime.timedelta(hours=i)} for i in range(6)])
    since = base + datetime.timedelta(hours=3)
    assert [d["_id"] for d in coll.find({"at": {"$gte": since}}).sort("_id")] == [3, 4, 5]
    got = [d["_id"] for d in coll.find().sort("at", DESCENDING).limit(2)]
    assert got == [5, 4]


def test_find_returns_whole_documents(people):
    assert people.find_one({"_id": 1}) == PEOPLE[0]
    assert list(people.find({"age": {"$lt": 30}}).sort("_id")) == [PEOPLE[1], PEOPLE[4]]


def test_find_one_without_match_is_none(people):
    assert people.find_one({"name": "nobody"}) is None


def test_find_on_missing_collection_is_empty(db):
    assert list(db["does_not_exist"].find()) == []


def test_unknown_query_operator_is_an_error(people):
    with pytest.raises(OperationFailure) as excinfo:
        list(people.find({"age": {"$noSuchOperator": 1}}))
    assert excinfo.value.code == 2  # BadValue


# --------------------------------------------------------------------------- projection


def test_projection_include(people):
    assert people.find_one({"_id": 1}, {"name": 1}) == {"_id": 1, "name": "ann"}


def test_projection_include_without_id(people):
    assert people.find_one({"_id": 1}, {"name": 1, "_id": 0}) == {"name": "ann"}


def test_projection_exclude(people):
    got = people.find_one({"_id": 1}, {"tags": 0, "addr": 0, "items": 0})
    assert got == {"_id": 1, "name": "ann", "age": 31}


def test_projection_only_exclude_id(people):
    got = people.find_one({"_id": 2}, {"_id": 0})
    assert got == {k: v for k, v in PEOPLE[1].items() if k != "_id"}


def test_projection_dotted_path(people):
    assert people.find_one({"_id": 1}, {"addr.city": 1}) == {"_id": 1, "addr": {"city": "Oslo"}}


def test_projection_keeps_document_order(people):
    got = people.find_one({"_id": 1}, {"age": 1, "name": 1})
    assert list(got.keys()) == ["_id", "name", "age"]


def test_projection_missing_field_is_omitted(people):
    assert people.find_one({"_id": 4}, {"nick": 1, "_id": 0}) == {}


def test_projection_mixing_include_and_exclude_is_an_error(people):
    with pytest.raises(OperationFailure):
        people.find_one({"_id": 1}, {"name": 1, "age": 0})


# --------------------------------------------------------------------------- sort, skip, limit


@pytest.fixture
def scores(coll):
    coll.insert_many(
        [
            {"_id": 1, "group": "b", "score": 10},
            {"_id": 2, "group": "a", "score": 30},
            {"_id": 3, "group": "b", "score": 50},
            {"_id": 4, "group": "a", "score": 20},
            {"_id": 5, "group": "c", "score": 40},
            {"_id": 6, "group": "a", "score": 40},
        ]
    )
    return coll


def test_sort_ascending(scores):
    assert [d["_id"] for d in scores.find().sort("score", ASCENDING)][:3] == [1, 4, 2]


def test_sort_descending(scores):
    assert [d["score"] for d in scores.find().sort("score", DESCENDING)] == [50, 40, 40, 30, 20, 10]


def test_sort_compound(scores):
    got = [d["_id"] for d in scores.find().sort([("group", ASCENDING), ("score", DESCENDING)])]
    assert got == [6, 2, 4, 3, 1, 5]


def test_sort_with_filter(scores):
    got = [d["_id"] for d in scores.find({"group": "a"}).sort("score", ASCENDING)]
    assert got == [4, 2, 6]


def test_sort_dotted_path_and_missing_values(coll):
    coll.insert_many(
        [
            {"_id": 1, "p": {"n": 3}},
            {"_id": 2, "p": {"n": 1}},
            {"_id": 3},  # missing sorts like null: before every number
            {"_id": 4, "p": {"n": 2}},
        ]
    )
    assert [d["_id"] for d in coll.find().sort("p.n", ASCENDING)] == [3, 2, 4, 1]
    assert [d["_id"] for d in coll.find().sort("p.n", DESCENDING)] == [1, 4, 2, 3]


def test_skip_and_limit(scores):
    got = [d["_id"] for d in scores.find().sort("_id", ASCENDING).skip(2).limit(3)]
    assert got == [3, 4, 5]


def test_limit_only(scores):
    assert len(list(scores.find().limit(4))) == 4


def test_skip_past_end(scores):
    assert list(scores.find().skip(100)) == []


def test_sort_across_bson_types(coll):
    # MongoDB's comparison order: null < numbers < strings < objects < arrays
    # < binary < ObjectId < booleans < dates.
    oid = ObjectId("650000000000000000000000")
    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    values = [True, "b", when, 2.5, {"k": 1}, None, oid, "a", 1, [9]]
    coll.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
    got = [d["v"] for d in coll.find({}, {"_id": 0}).sort("v", ASCENDING)]
    got = [v.replace(tzinfo=datetime.timezone.utc) if isinstance(v, datetime.datetime) else v for v in got]
    # An array sorts by its smallest element in ascending order: [9] sorts as 9.
    expected = [None, 1, 2.5, [9], "a", "b", {"k": 1}, oid, True, when]
    assert [(type(v), v) for v in got] == [(type(v), v) for v in expected]


# --------------------------------------------------------------------------- cursors


class CommandRecorder(monitoring.CommandListener):
    def __init__(self):
        self.events = []

    def started(self, event):
        pass

    def succeeded(self, event):
        self.events.append(event)

    def failed(self, event):
        pass

    def replies(self, name):
        return [e.reply for e in self.events if e.command_name == name]


def test_cursor_batches_return_everything_in_order(server, db):
    recorder = CommandRecorder()
    client = server.client(event_listeners=[recorder])
    try:
        coll = client[db.name]["batches"]
        coll.insert_many([{"_id": i, "v": f"doc-{i}"} for i in range(100)])
        got = list(coll.find().sort("_id", ASCENDING).batch_size(7))
    finally:
        client.close()
    assert [d["_id"] for d in got] == list(range(100))
    assert got[42] == {"_id": 42, "v": "doc-42"}

    (find_reply,) = recorder.replies("find")
    get_more_replies = recorder.replies("getMore")
    batches = [find_reply["cursor"]["firstBatch"]] + [r["cursor"]["nextBatch"] for r in get_more_replies]
    assert all(len(b) <= 7 for b in batches)
    assert len(get_more_replies) >= 14  # 100 documents at most 7 at a time
    assert sum(len(b) for b in batches) == 100
    assert find_reply["cursor"]["id"] != 0
    assert get_more_replies[-1]["cursor"]["id"] == 0  # exhausted cursor is closed


def test_cursor_default_batches(coll):
    coll.insert_many([{"_id": i} for i in range(250)])
    assert sorted(d["_id"] for d in coll.find()) == list(range(250))


def test_cursor_limit_with_small_batches(coll):
    coll.insert_many([{"_id": i} for i in range(30)])
    got = [d["_id"] for d in coll.find().sort("_id", ASCENDING).limit(10).batch_size(3)]
    assert got == list(range(10))


def test_kill_cursors(db):
    db["kc"].insert_many([{"_id": i} for i in range(10)])
    reply = db.command("find", "kc", batchSize=2)
    cursor_id = reply["cursor"]["id"]
    assert cursor_id != 0
    assert len(reply["cursor"]["firstBatch"]) == 2
    killed = db.command("killCursors", "kc", cursors=[cursor_id])
    assert killed["cursorsKilled"] == [cursor_id]
    with pytest.raises(OperationFailure) as excinfo:
        db.command("getMore", cursor_id, collection="kc")
    assert excinfo.value.code == 43  # CursorNotFound


# --------------------------------------------------------------------------- updates


def test_update_one_set(coll):
    coll.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}])
    result = coll.update_one({"a": 1}, {"$set": {"a": 5, "b": "new"}})
    assert (result.matched_count, result.modified_count, result.upserted_id) == (1, 1, None)
    assert sorted(d["a"] for d in coll.find()) == [1, 5]
    assert coll.find_one({"a": 5}, {"_id": 0}) == {"a": 5, "b": "new"}


def test_update_one_without_change_counts_no_modification(coll):
    coll.insert_one({"_id": 1, "a": 1})
    result = coll.update_one({"_id": 1}, {"$set": {"a": 1}})
    assert (result.matched_count, result.modified_count) == (1, 0)


def test_update_one_no_match(coll):
    coll.insert_one({"_id": 1, "a": 1})
    result = coll.update_one({"_id": 2}, {"$set": {"a": 2}})
    assert (result.matched_count, result.modified_count, result.upserted_id) == (0, 0, None)
    assert coll.count_documents({}) == 1


def test_update_set_dotted_creates_subdocument(coll):
    coll.insert_one({"_id": 1})
    coll.update_one({"_id": 1}, {"$set": {"x.y": 1}})
    assert coll.find_one({"_id": 1}) == {"_id": 1, "x": {"y": 1}}


def test_update_set_keeps_field_position(coll):
    coll.insert_one({"_id": 1, "a": 1, "b": 2, "c": 3})
    coll.update_one({"_id": 1}, {"$set": {"b": 20, "d": 4}})
    got = coll.find_one({"_id": 1})
    assert list(got.items()) == [("_id", 1), ("a", 1), ("b", 20), ("c", 3), ("d", 4)]


def test_update_unset(coll):
    coll.insert_one({"_id": 1, "a": 1, "b": 2})
    result = coll.update_one({"_id": 1}, {"$unset": {"a": ""}})
    assert result.modified_count == 1
    assert coll.find_one({"_id": 1}) == {"_id": 1, "b": 2}


def test_update_inc(coll):
    coll.insert_one({"_id": 1, "n": 5, "f": 1.5})
    coll.update_one({"_id": 1}, {"$inc": {"n": 2, "f": 1, "new": 3}})
    assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 7, "f": 2.5, "new": 3}


def test_update_inc_on_string_is_type_mismatch(coll):
    coll.insert_one({"_id": 1, "s": "text"})
    with pytest.raises(WriteError) as excinfo:
        coll.update_one({"_id": 1}, {"$inc": {"s": 1}})
    assert excinfo.value.code == 14  # TypeMismatch
    assert coll.find_one({"_id": 1}) == {"_id": 1, "s": "text"}


def test_update_many(coll):
    coll.insert_many([{"_id": i, "g": "a" if i < 3 else "b", "n": i} for i in range(5)])
    result = coll.update_many({"g": "a"}, {"$inc": {"n": 10}, "$set": {"seen": True}})
    assert (result.matched_count, result.modified_count) == (3, 3)
    assert [d["n"] for d in coll.find().sort("_id")] == [10, 11, 12, 3, 4]
    assert coll.count_documents({"seen": True}) == 3


def test_update_many_no_match(coll):
    coll.insert_many([{"_id": i} for i in range(3)])
    result = coll.update_many({"missing": 1}, {"$set": {"x": 1}})
    assert (result.matched_count, result.modified_count) == (0, 0)


def test_update_changing_id_is_an_error(coll):
    coll.insert_one({"_id": 1, "a": 1})
    with pytest.raises(WriteError) as excinfo:
        coll.update_one({"_id": 1}, {"$set": {"_id": 2}})
    assert excinfo.value.code == 66  # ImmutableField
    assert coll.find_one() == {"_id": 1, "a": 1}


def test_replace_one(coll):
    coll.insert_one({"_id": 1, "a": 1, "b": 2})
    result = coll.replace_one({"_id": 1}, {"c": 3, "a": "x"})
    assert (result.matched_count, result.modified_count) == (1, 1)
    got = coll.find_one({"_id": 1})
    assert list(got.items()) == [("_id", 1), ("c", 3), ("a", "x")]


def test_replace_one_no_match(coll):
    result = coll.replace_one({"_id": 99}, {"c": 3})
    assert (result.matched_count, result.modified_count, result.upserted_id) == (0, 0, None)
    assert coll.count_documents({}) == 0


def test_upsert_with_update_operators(coll):
    result = coll.update_one({"k": "new"}, {"$set": {"v": 1}}, upsert=True)
    assert result.matched_count == 0
    assert result.modified_count == 0
    assert isinstance(result.upserted_id, ObjectId)
    assert coll.find_one({"_id": result.upserted_id}) == {"_id": result.upserted_id, "k": "new", "v": 1}
    # Second time it matches instead of inserting.
    again = coll.update_one({"k": "new"}, {"$set": {"v": 2}}, upsert=True)
    assert (again.matched_count, again.modified_count, again.upserted_id) == (1, 1, None)
    assert coll.count_documents({}) == 1


def test_upsert_with_id_in_filter(coll):
    result = coll.update_one({"_id": "abc"}, {"$inc": {"n": 1}}, upsert=True)
    assert result.upserted_id == "abc"
    assert coll.find_one({"_id": "abc"}) == {"_id": "abc", "n": 1}


def test_upsert_replace(coll):
    result = coll.replace_one({"_id": 7}, {"v": 2}, upsert=True)
    assert result.upserted_id == 7
    assert coll.find_one({"_id": 7}) == {"_id": 7, "v": 2}


def test_upsert_many(coll):
    result = coll.update_many({"k": 1}, {"$set": {"v": 1}}, upsert=True)
    assert isinstance(result.upserted_id, ObjectId)
    assert coll.find_one({}, {"_id": 0}) == {"k": 1, "v": 1}


# --------------------------------------------------------------------------- findAndModify


def test_find_one_and_update(coll):
    coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    before = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 10}})
    assert before == {"_id": 1, "n": 1}
    after = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 10}}, return_document=ReturnDocument.AFTER)
    assert after == {"_id": 1, "n": 21}
    assert coll.find_one_and_update({"_id": 99}, {"$set": {"n": 0}}) is None


def test_find_one_and_update_sort_and_upsert(coll):
    coll.insert_many([{"_id": i, "q": "job", "prio": p} for i, p in enumerate([5, 9, 1])])
    top = coll.find_one_and_update(
        {"q": "job"}, {"$set": {"taken": True}}, sort=[("prio", DESCENDING)], return_document=ReturnDocument.AFTER
    )
    assert top == {"_id": 1, "q": "job", "prio": 9, "taken": True}
    new = coll.find_one_and_update(
        {"_id": "fresh"}, {"$set": {"v": 1}}, upsert=True, return_document=ReturnDocument.AFTER
    )
    assert new == {"_id": "fresh", "v": 1}


def test_find_one_and_replace(coll):
    coll.insert_one({"_id": 1, "a": 1})
    assert coll.find_one_and_replace({"_id": 1}, {"b": 2}) == {"_id": 1, "a": 1}
    assert coll.find_one({"_id": 1}) == {"_id": 1, "b": 2}


def test_find_one_and_delete(coll):
    coll.insert_many([{"_id": 1, "n": 3}, {"_id": 2, "n": 7}])
    assert coll.find_one_and_delete({}, sort=[("n", DESCENDING)]) == {"_id": 2, "n": 7}
    assert [d["_id"] for d in coll.find()] == [1]
    assert coll.find_one_and_delete({"_id": 99}) is None


# --------------------------------------------------------------------------- bulk_write


def test_bulk_write_mixed_operations(coll):
    coll.insert_many([{"_id": i, "n": i} for i in range(5)])
    result = coll.bulk_write(
        [
            InsertOne({"_id": 10, "n": 10}),
            UpdateOne({"_id": 0}, {"$set": {"n": 100}}),
            UpdateMany({"n": {"$lt": 3}}, {"$inc": {"n": 1}}),
            ReplaceOne({"_id": 4}, {"replaced": True}),
            DeleteOne({"_id": 3}),
            DeleteMany({"n": {"$gte": 100}}),
            UpdateOne({"_id": 20}, {"$set": {"n": 20}}, upsert=True),
        ]
    )
    assert result.inserted_count == 1
    assert result.matched_count == 1 + 2 + 1
    assert result.modified_count == 1 + 2 + 1
    assert result.deleted_count == 2
    assert result.upserted_count == 1
    assert result.upserted_ids == {6: 20}
    assert list(coll.find().sort("_id")) == [
        {"_id": 1, "n": 2},
        {"_id": 2, "n": 3},
        {"_id": 4, "replaced": True},
        {"_id": 10, "n": 10},
        {"_id": 20, "n": 20},
    ]


# --------------------------------------------------------------------------- deletes


def test_delete_one(coll):
    coll.insert_many([{"_id": i, "g": "a"} for i in range(3)])
    result = coll.delete_one({"g": "a"})
    assert result.deleted_count == 1
    assert coll.count_documents({}) == 2


def test_delete_one_no_match(coll):
    coll.insert_one({"_id": 1})
    assert coll.delete_one({"_id": 2}).deleted_count == 0
    assert coll.count_documents({}) == 1


def test_delete_many(coll):
    coll.insert_many([{"_id": i, "g": "a" if i % 2 else "b"} for i in range(10)])
    result = coll.delete_many({"g": "a"})
    assert result.deleted_count == 5
    assert sorted(d["_id"] for d in coll.find()) == [0, 2, 4, 6, 8]


def test_delete_many_everything(coll):
    coll.insert_many([{"_id": i} for i in range(10)])
    assert coll.delete_many({}).deleted_count == 10
    assert coll.count_documents({}) == 0


# --------------------------------------------------------------------------- counts, distinct


def test_count_documents(people):
    assert people.count_documents({}) == 5
    assert people.count_documents({"age": 25}) == 2
    assert people.count_documents({"addr.city": "Oslo"}) == 2
    assert people.count_documents({"name": "nobody"}) == 0
    assert people.count_documents({}, skip=1, limit=3) == 3
    assert people.count_documents({}, skip=4) == 1


def test_counts_of_missing_collection(db):
    assert db["nothing_here"].count_documents({}) == 0
    assert db["nothing_here"].estimated_document_count() == 0


def test_estimated_document_count(coll):
    coll.insert_many([{"i": i} for i in range(42)])
    assert coll.estimated_document_count() == 42
    coll.delete_many({"i": {"$lt": 2}})
    assert coll.estimated_document_count() == 40


def test_count_command(coll):
    coll.insert_many([{"i": i} for i in range(10)])
    assert coll.database.command("count", coll.name, query={"i": {"$gte": 7}})["n"] == 3


def test_distinct(coll):
    coll.insert_many(
        [
            {"color": "red", "size": 1},
            {"color": "blue", "size": 2},
            {"color": "red", "size": 3},
            {"color": ["green", "red"], "size": 4},
            {"size": 5},
        ]
    )
    assert sorted(coll.distinct("color")) == ["blue", "green", "red"]
    assert sorted(coll.distinct("color", {"size": {"$gte": 3}})) == ["green", "red"]
    assert sorted(coll.distinct("size")) == [1, 2, 3, 4, 5]
    assert coll.distinct("nothing") == []


def test_distinct_dotted(people):
    assert sorted(people.distinct("addr.city")) == ["Bergen", "Oslo"]
    assert sorted(people.distinct("items.sku")) == ["x", "y"]


# --------------------------------------------------------------------------- write errors


def test_duplicate_id(coll):
    coll.insert_one({"_id": 1, "v": "first"})
    with pytest.raises(DuplicateKeyError) as excinfo:
        coll.insert_one({"_id": 1, "v": "second"})
    err = excinfo.value
    assert err.code == 11000
    assert err.details["keyValue"] == {"_id": 1}
    assert err.details["keyPattern"] == {"_id": 1}
    assert err.details["errmsg"].startswith("E11000 duplicate key error")
    assert coll.find_one({"_id": 1}) == {"_id": 1, "v": "first"}


def test_duplicate_on_unique_index(coll):
    coll.create_index("email", unique=True)
    coll.insert_one({"email": "a@example.com"})
    with pytest.raises(DuplicateKeyError) as excinfo:
        coll.insert_one({"email": "a@example.com"})
    assert excinfo.value.code == 11000
    assert excinfo.value.details["keyValue"] == {"email": "a@example.com"}
    assert coll.count_documents({}) == 1


def test_update_into_duplicate_key(coll):
    coll.create_index("email", unique=True)
    coll.insert_many([{"_id": 1, "email": "a"}, {"_id": 2, "email": "b"}])
    with pytest.raises(DuplicateKeyError) as excinfo:
        coll.update_one({"_id": 2}, {"$set": {"email": "a"}})
    assert excinfo.value.code == 11000
    assert coll.find_one({"_id": 2}) == {"_id": 2, "email": "b"}


def test_insert_many_unordered_with_duplicate(coll):
    docs = [{"_id": 1}, {"_id": 2}, {"_id": 1, "dup": True}, {"_id": 3}, {"_id": 4}]
    with pytest.raises(BulkWriteError) as excinfo:
        coll.insert_many(docs, ordered=False)
    details = excinfo.value.details
    assert details["nInserted"] == 4
    assert len(details["writeErrors"]) == 1
    (write_error,) = details["writeErrors"]
    assert write_error["index"] == 2
    assert write_error["code"] == 11000
    assert write_error["keyValue"] == {"_id": 1}
    assert sorted(d["_id"] for d in coll.find()) == [1, 2, 3, 4]
    assert coll.find_one({"_id": 1}) == {"_id": 1}


def test_insert_many_ordered_stops_at_duplicate(coll):
    docs = [{"_id": 1}, {"_id": 2}, {"_id": 1}, {"_id": 3}]
    with pytest.raises(BulkWriteError) as excinfo:
        coll.insert_many(docs, ordered=True)
    details = excinfo.value.details
    assert details["nInserted"] == 2
    assert [e["index"] for e in details["writeErrors"]] == [2]
    assert sorted(d["_id"] for d in coll.find()) == [1, 2]


# --------------------------------------------------------------------------- large documents


def test_document_near_16_mib(coll):
    # The largest document MongoDB stores is 16 MiB of BSON, all overhead included.
    overhead = len(bson.encode({"_id": "big", "s": ""}))
    doc = {"_id": "big", "s": "x" * (16 * 1024 * 1024 - overhead)}
    assert len(bson.encode(doc)) == 16 * 1024 * 1024
    coll.insert_one(doc)
    got = coll.find_one({"_id": "big"})
    assert got["_id"] == "big" and got["s"] == doc["s"]


def test_insert_many_larger_than_one_document_limit(coll):
    # 20 MiB in one insert: more than maxBsonObjectSize, less than maxMessageSizeBytes,
    # so the driver sends it as one OP_MSG document sequence.
    docs = [{"_id": i, "s": chr(ord("a") + i) * (5 * 1024 * 1024)} for i in range(4)]
    assert coll.insert_many(docs).inserted_ids == [0, 1, 2, 3]
    for d in docs:
        assert coll.find_one({"_id": d["_id"]})["s"] == d["s"]
