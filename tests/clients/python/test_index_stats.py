"""`$indexStats`, `$planCacheStats` and the Stable API through pymongo.

`$indexStats` (MongoDB's manual, "$indexStats"): one document per index with `name`, `key`,
`host`, `accesses: {ops, since}` and `spec`; `ops` counts the operations whose plan used the
index (find, count, aggregate, update, delete), in memory since the server started or the
index was built. `explain` counts nothing. `$planCacheStats` is empty and `planCacheClear`/`planCacheListFilters`/
`planCacheClearFilters` have nothing to do: docgate caches no plans and sets no index filters. With `ServerApi("1", strict=True)`, options and stages outside API V1 answer 323.
"""

from __future__ import annotations

import datetime

import pytest
from pymongo.errors import OperationFailure
from pymongo.server_api import ServerApi


def failure(action) -> OperationFailure:
    with pytest.raises(OperationFailure) as raised:
        action()
    return raised.value


def index_stats(coll) -> dict:
    return {entry["name"]: entry for entry in coll.aggregate([{"$indexStats": {}}])}


def test_index_stats_counts_the_operations_that_chose_each_index(coll):
    coll.insert_many([{"_id": i, "a": i % 5, "b": i} for i in range(20)])
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    coll.create_index("a")
    stats = index_stats(coll)
    assert sorted(stats) == ["_id_", "a_1"]
    assert stats["a_1"]["accesses"]["ops"] == 0
    assert stats["a_1"]["key"] == {"a": 1}
    assert stats["a_1"]["spec"] == {"v": 2, "key": {"a": 1}, "name": "a_1"}
    assert stats["_id_"]["spec"]["key"] == {"_id": 1}
    assert stats["a_1"]["host"] and ":" in stats["a_1"]["host"]
    since = stats["a_1"]["accesses"]["since"].replace(tzinfo=datetime.timezone.utc)
    assert since >= before, "a new index counts from its build"

    assert len(list(coll.find({"a": 1}))) == 4
    assert coll.count_documents({"a": {"$gte": 3}}) == 8
    coll.update_many({"a": 2}, {"$set": {"c": 1}})
    coll.delete_one({"a": 4})
    assert list(coll.aggregate([{"$match": {"a": 0}}, {"$count": "n"}])) == [{"n": 4}]
    # Read through the index, sorted in docgate.
    sorted_b = coll.aggregate([{"$match": {"a": 3}}, {"$sort": {"b": -1}}, {"$project": {"b": 1}}])
    assert [d["b"] for d in sorted_b] == [18, 13, 8, 3]
    assert coll.find_one({"_id": 7})["b"] == 7
    list(coll.find({"b": {"$gt": 3}}))  # no index on b: a collection scan
    coll.find({"a": 1}).explain()  # planned, not run

    stats = index_stats(coll)
    assert stats["a_1"]["accesses"]["ops"] == 6
    assert stats["_id_"]["accesses"]["ops"] == 1
    assert isinstance(stats["_id_"]["accesses"]["ops"], int)


def test_index_stats_rebuilt_index_starts_again(coll):
    coll.insert_one({"_id": 1, "a": 1})
    coll.create_index("a")
    coll.find_one({"a": 1})
    assert index_stats(coll)["a_1"]["accesses"]["ops"] == 1
    coll.drop_index("a_1")
    coll.create_index("a")
    assert index_stats(coll)["a_1"]["accesses"]["ops"] == 0
    # A dropped collection's counts go with it, `_id_`'s too.
    coll.find_one({"_id": 1})
    assert index_stats(coll)["_id_"]["accesses"]["ops"] == 1
    coll.drop()
    coll.insert_one({"_id": 1})
    assert index_stats(coll)["_id_"]["accesses"]["ops"] == 0
    # A renamed one keeps them.
    coll.find_one({"_id": 1})
    coll.rename("renamed")
    assert index_stats(coll.database["renamed"])["_id_"]["accesses"]["ops"] == 1


def test_index_stats_stage_rules(coll, db):
    coll.insert_one({"_id": 1})
    assert list(db["missing"].aggregate([{"$indexStats": {}}])) == []
    # Stages after it run over its documents.
    assert list(coll.aggregate([{"$indexStats": {}}, {"$project": {"_id": 0, "name": 1}}])) == [
        {"name": "_id_"}
    ]
    assert failure(lambda: list(coll.aggregate([{"$match": {}}, {"$indexStats": {}}]))).code == 40602
    assert failure(lambda: list(coll.aggregate([{"$indexStats": {"x": 1}}]))).code == 28803


def test_plan_cache_stats_is_empty(coll):
    coll.insert_one({"_id": 1, "a": 1})
    coll.create_index("a")
    coll.find_one({"a": 1})
    assert list(coll.aggregate([{"$planCacheStats": {}}])) == []
    assert failure(lambda: list(coll.aggregate([{"$match": {}}, {"$planCacheStats": {}}]))).code == 40602


def test_plan_cache_commands_have_nothing_to_clear_or_list(coll, db):
    coll.insert_one({"_id": 1, "a": 1})
    assert db.command("planCacheClear", coll.name)["ok"] == 1.0
    assert db.command("planCacheClear", coll.name, query={"a": 1}, sort={"a": 1})["ok"] == 1.0
    assert db.command("planCacheListFilters", coll.name)["filters"] == []
    assert db.command("planCacheClearFilters", coll.name)["ok"] == 1.0
    assert failure(lambda: db.command("planCacheClear", coll.name, bogus=1)).code == 40415
    # Index filters would change the plans: not implemented, an unknown command.
    error = failure(
        lambda: db.command("planCacheSetFilter", coll.name, query={"a": 1}, indexes=[{"a": 1}])
    )
    assert error.code == 59


def test_strict_stable_api_refuses_what_is_outside_v1(server, db):
    strict = server.client(server_api=ServerApi("1", strict=True))
    try:
        coll = strict[db.name]["items"]
        coll.insert_one({"_id": 1, "a": 1})
        assert coll.find_one({"_id": 1}) == {"_id": 1, "a": 1}
        assert coll.estimated_document_count() == 1
        for action in [
            lambda: coll.distinct("a"),
            lambda: list(coll.aggregate([{"$indexStats": {}}])),
            lambda: list(coll.find({}, cursor_type=__import__("pymongo").CursorType.TAILABLE)),
            lambda: coll.create_index("a", sparse=True),
            lambda: strict[db.name].create_collection("capped", capped=True, size=4096),
        ]:
            error = failure(action)
            assert error.code == 323, error.details
            assert error.details["codeName"] == "APIStrictError"
    finally:
        strict.close()
