"""Views through pymongo, with expectations from MongoDB's manual ("Views", "create",
"db.createView()", "Supported operations for views"): a view is created with `viewOn` and a
`pipeline`, is read with find/aggregate/count/distinct as its pipeline followed by the
read, is listed by listCollections as `type: "view"` with `info.readOnly: true`, refuses
writes and indexes with 166 CommandNotSupportedOnView, refuses cycles (160) and chains
deeper than 20 views (165), and keeps its own collation.
"""

from __future__ import annotations

import pytest
from pymongo import InsertOne
from pymongo.errors import OperationFailure


def code_of(action) -> int:
    with pytest.raises(OperationFailure) as raised:
        action()
    return raised.value.code


@pytest.fixture
def src(db):
    coll = db["src"]
    coll.insert_many([{"_id": i, "a": i % 3, "name": f"n{i}", "tags": [i, i + 1]} for i in range(10)])
    coll.create_index("a")
    return coll


@pytest.fixture
def view(db, src):
    db.create_collection("v", viewOn="src", pipeline=[{"$match": {"a": {"$gte": 1}}}, {"$project": {"tags": 0}}])
    return db["v"]


def test_find_reads_the_pipeline_then_the_query(view):
    assert [d["_id"] for d in view.find().sort("_id", 1)] == [1, 2, 4, 5, 7, 8]
    assert list(view.find({"a": 2}, {"_id": 1}).sort("_id", -1).skip(1).limit(2)) == [{"_id": 5}, {"_id": 2}]
    assert view.find_one({"_id": 4}) == {"_id": 4, "a": 1, "name": "n4"}
    # A projection of a view is the `$project` after the view's pipeline.
    assert list(view.find({"_id": 1}, {"name": 1, "_id": 0})) == [{"name": "n1"}]


def test_count_distinct_and_aggregate_read_the_view(view):
    assert view.count_documents({}) == 6
    assert view.count_documents({"a": 1}) == 3
    assert view.estimated_document_count() == 6
    assert view.count_documents({}, skip=2, limit=3) == 3
    assert view.distinct("a") == [1, 2]
    assert view.distinct("name", {"a": 2}) == ["n2", "n5", "n8"]
    grouped = list(view.aggregate([{"$group": {"_id": "$a", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    assert grouped == [{"_id": 1, "n": 3}, {"_id": 2, "n": 3}]


def test_a_view_reads_the_source_as_it_is_now(view, src):
    src.insert_one({"_id": 20, "a": 1, "name": "late"})
    src.delete_one({"_id": 1})
    assert [d["_id"] for d in view.find({"a": 1}).sort("_id", 1)] == [4, 7, 20]


def test_a_view_of_a_missing_collection_is_empty(db):
    db.command("create", "nothing_yet", viewOn="absent", pipeline=[])
    assert list(db["nothing_yet"].find()) == []
    assert db["nothing_yet"].count_documents({}) == 0


def test_views_on_views_compose(db, view):
    db.command("create", "v2", viewOn="v", pipeline=[{"$match": {"_id": {"$lt": 5}}}])
    assert [d["_id"] for d in db["v2"].find().sort("_id", 1)] == [1, 2, 4]
    assert db["v2"].count_documents({"a": 2}) == 1


def test_cursor_batches_over_a_view(db, src):
    db.create_collection("all", viewOn="src", pipeline=[])
    cursor = db["all"].find().sort("_id", 1).batch_size(3)
    assert [d["_id"] for d in cursor] == list(range(10))


def test_list_collections_shows_the_view(db, view):
    infos = {info["name"]: info for info in db.list_collections()}
    assert infos["v"]["type"] == "view"
    assert infos["v"]["options"] == {
        "viewOn": "src",
        "pipeline": [{"$match": {"a": {"$gte": 1}}}, {"$project": {"tags": 0}}],
    }
    assert infos["v"]["info"] == {"readOnly": True}
    assert "idIndex" not in infos["v"]
    assert infos["src"]["type"] == "collection"
    assert infos["src"]["info"]["readOnly"] is False
    assert sorted(db.list_collection_names()) == ["src", "v"]
    assert [i["name"] for i in db.list_collections(filter={"type": "view"})] == ["v"]
    assert list(db.list_collections(filter={"name": "v"}, nameOnly=True)) == [{"name": "v", "type": "view"}]


def test_writes_to_a_view_are_166(view):
    for action in [
        lambda: view.insert_one({"x": 1}),
        lambda: view.insert_many([{"x": 1}, {"x": 2}]),
        lambda: view.update_one({}, {"$set": {"x": 1}}),
        lambda: view.update_many({}, {"$set": {"x": 1}}, upsert=True),
        lambda: view.replace_one({"_id": 1}, {"x": 1}),
        lambda: view.delete_one({}),
        lambda: view.delete_many({}),
        lambda: view.find_one_and_update({}, {"$set": {"x": 1}}),
        lambda: view.find_one_and_delete({}),
        lambda: view.bulk_write([InsertOne({"x": 1})]),
    ]:
        assert code_of(action) == 166
    assert view.count_documents({}) == 6


def test_indexes_and_statistics_of_a_view_are_166(db, view):
    assert code_of(lambda: view.create_index("a")) == 166
    assert code_of(lambda: list(view.list_indexes())) == 166
    assert code_of(lambda: view.drop_index("a_1")) == 166
    assert code_of(lambda: db.command("collStats", "v")) == 166
    assert db.command("dbStats")["views"] == 1


def test_rename_and_drop(client, db, view, src):
    assert code_of(lambda: client.admin.command("renameCollection", f"{db.name}.v", to=f"{db.name}.w")) == 166
    db.create_collection("other")
    rename_onto = lambda: client.admin.command(  # noqa: E731
        "renameCollection", f"{db.name}.other", to=f"{db.name}.v", dropTarget=True
    )
    assert code_of(rename_onto) == 48
    assert db.drop_collection("v")["ns"] == f"{db.name}.v"
    assert "v" not in db.list_collection_names()
    assert src.count_documents({}) == 10


def test_create_again(db, view):
    # The same definition again succeeds; another one is 48 NamespaceExists.
    db.command("create", "v", viewOn="src", pipeline=[{"$match": {"a": {"$gte": 1}}}, {"$project": {"tags": 0}}])
    assert code_of(lambda: db.command("create", "v", viewOn="src", pipeline=[])) == 48
    assert code_of(lambda: db.command("create", "src", viewOn="v", pipeline=[])) == 48


def test_definitions_are_checked(db, src):
    # A stage that writes has no place in a view.
    assert code_of(lambda: db.command("create", "w", viewOn="src", pipeline=[{"$out": "x"}])) == 167
    assert code_of(lambda: db.command("create", "w", viewOn="src", pipeline=[{"$merge": {"into": "x"}}])) == 167
    # The pipeline is validated when the view is created.
    assert code_of(lambda: db.command("create", "w", viewOn="src", pipeline=[{"$nope": {}}])) == 40324
    assert code_of(lambda: db.command("create", "w", viewOn="", pipeline=[])) == 2
    assert code_of(lambda: db.command("create", "w", pipeline=[])) == 72
    assert code_of(lambda: db.command("create", "w", viewOn="src", pipeline=[], validationLevel="off")) == 167
    assert "w" not in db.list_collection_names()


def test_cycles_are_160(db, src):
    db.command("create", "c1", viewOn="src", pipeline=[])
    db.command("create", "c2", viewOn="c1", pipeline=[])
    assert code_of(lambda: db.command("create", "c3", viewOn="c3", pipeline=[])) == 160
    with pytest.raises(OperationFailure) as raised:
        db.command("collMod", "c1", viewOn="c2", pipeline=[])
    assert raised.value.code == 160
    assert raised.value.details["errmsg"] == f"View cycle detected: {db.name}.c1 => {db.name}.c2 => {db.name}.c1"
    # Through a $lookup of the pipeline too.
    lookup = {"$lookup": {"from": "c2", "localField": "a", "foreignField": "a", "as": "m"}}
    assert code_of(lambda: db.command("collMod", "c1", viewOn="src", pipeline=[lookup])) == 160
    assert db["c2"].count_documents({}) == 10


def test_at_most_20_views_deep(db, src):
    under = "src"
    for depth in range(1, 21):
        db.command("create", f"d{depth}", viewOn=under, pipeline=[])
        under = f"d{depth}"
    assert db["d20"].count_documents({}) == 10
    assert code_of(lambda: db.command("create", "d21", viewOn="d20", pipeline=[])) == 165


def test_collation_of_a_view(db):
    db["words"].insert_many([{"_id": 1, "w": "b"}, {"_id": 2, "w": "A"}, {"_id": 3, "w": "a"}])
    db.command("create", "ci", viewOn="words", pipeline=[], collation={"locale": "en", "strength": 2})
    assert sorted(d["_id"] for d in db["ci"].find({"w": "a"})) == [2, 3]
    assert [d["w"] for d in db["ci"].find().sort([("w", 1), ("_id", 1)])] == ["A", "a", "b"]
    assert db["ci"].distinct("w") in (["A", "b"], ["a", "b"])
    info = next(db.list_collections(filter={"name": "ci"}))
    assert info["options"]["collation"]["locale"] == "en"
    assert info["options"]["collation"]["strength"] == 2
    # A read cannot ask for another collation (167), nor can a view on it have another one.
    assert code_of(lambda: db.command("find", "ci", collation={"locale": "fr"})) == 167
    assert code_of(lambda: list(db["ci"].aggregate([], collation={"locale": "simple"}))) == 167
    assert code_of(lambda: db.command("create", "ci2", viewOn="ci", pipeline=[])) == 167
    # The simple view of the same collection compares binary.
    db.command("create", "cs", viewOn="words", pipeline=[])
    assert [d["_id"] for d in db["cs"].find({"w": "a"})] == [3]


def test_find_options_an_aggregation_cannot_run_are_168(db, view):
    for option in [{"min": {"a": 1}}, {"max": {"a": 1}}, {"returnKey": True}, {"showRecordId": True},
                   {"tailable": True}, {"noCursorTimeout": True}, {"allowPartialResults": True}]:
        assert code_of(lambda: db.command("find", "v", **option)) == 168, option
    assert code_of(lambda: db.command("find", "v", sort={"$natural": 1})) == 168
    assert code_of(lambda: db.command("find", "v", singleBatch=True)) == 168
    assert db.command("find", "v", singleBatch=True, limit=1)["cursor"]["firstBatch"][0]["_id"] in (1, 2)


def test_lookup_and_union_read_a_view(db, view):
    db["orders"].insert_many([{"_id": "o1", "a": 2}, {"_id": "o2", "a": 0}])
    joined = list(db["orders"].aggregate([
        {"$lookup": {"from": "v", "localField": "a", "foreignField": "a", "as": "m"}},
        {"$project": {"n": {"$size": "$m"}}},
        {"$sort": {"_id": 1}},
    ]))
    assert joined == [{"_id": "o1", "n": 3}, {"_id": "o2", "n": 0}]
    union = list(db["orders"].aggregate([{"$unionWith": "v"}, {"$count": "n"}]))
    assert union == [{"n": 8}]


def test_out_and_merge_into_a_view_are_166(db, view, src):
    assert code_of(lambda: list(src.aggregate([{"$out": "v"}]))) == 166
    assert code_of(lambda: list(src.aggregate([{"$merge": {"into": "v"}}]))) == 166


def test_a_view_of_an_indexed_field_reads_through_the_index(db, src):
    """The view's leading $match and the find's filter are one read of the collection: the
    index on `a` serves it (explain), and the documents are those of the same query."""
    db.create_collection("ones", viewOn="src", pipeline=[{"$match": {"a": 1}}])
    plan = db.command("explain", {"find": "ones", "filter": {"_id": {"$gt": 3}}})
    stages = []
    node = plan["queryPlanner"]["winningPlan"]
    while node:
        stages.append(node.get("stage"))
        node = node.get("inputStage")
    assert "IXSCAN" in stages
    assert [d["_id"] for d in db["ones"].find({"_id": {"$gt": 3}}).sort("_id", 1)] == [4, 7]
