"""`$$NOW` and `$$CLUSTER_TIME` through pymongo: MongoDB fixes both once per command (manual,
"Variables in Aggregation Expressions": "$$NOW returns the same value for all members of the
deployment and remains the same throughout all stages of the aggregation pipeline"), so every
document and every stage of one command — and a command `let` that binds `$$NOW` — sees one
value; the next command sees a later one. docgate presents itself as a replica set, where
`$$CLUSTER_TIME` is the command's cluster time (a Timestamp).
"""

from __future__ import annotations

import datetime
import time

from bson import Timestamp


def test_now_is_one_value_per_aggregate(coll):
    coll.insert_many([{"_id": i, "s": f"{i:05d}"} for i in range(3000)])
    # Enough work (an in-memory sort, a $group) to span several milliseconds.
    result = list(
        coll.aggregate(
            [
                {"$addFields": {"first": "$$NOW"}},
                {"$sort": {"s": -1}},
                {"$addFields": {"second": "$$NOW", "clock": "$$CLUSTER_TIME"}},
                {"$group": {"_id": None, "nows": {"$addToSet": "$first"}, "later": {"$addToSet": "$second"}, "clocks": {"$addToSet": "$clock"}, "bound": {"$addToSet": "$$today"}}},
            ],
            let={"today": "$$NOW"},
        )
    )
    assert len(result) == 1
    group = result[0]
    assert len(group["nows"]) == 1 and group["nows"] == group["later"] == group["bound"], group
    assert isinstance(group["nows"][0], datetime.datetime)
    assert len(group["clocks"]) == 1 and isinstance(group["clocks"][0], Timestamp), group

    time.sleep(0.01)
    again = list(coll.aggregate([{"$limit": 1}, {"$project": {"now": "$$NOW"}}]))[0]["now"]
    assert again > group["nows"][0], "a later command sees a later $$NOW"


def test_now_is_one_value_per_update_and_find(coll):
    coll.insert_many([{"_id": i} for i in range(2000)])
    coll.update_many({}, [{"$set": {"touched": "$$NOW", "clock": "$$CLUSTER_TIME"}}])
    assert len(coll.distinct("touched")) == 1
    assert len(coll.distinct("clock")) == 1
    touched = coll.find_one()["touched"]
    # Every document compares against the same $$NOW: all or none match.
    assert coll.count_documents({"$expr": {"$lte": ["$touched", "$$NOW"]}}) == 2000
    assert coll.count_documents({"$expr": {"$gt": ["$touched", "$$NOW"]}}) == 0
    assert isinstance(touched, datetime.datetime)


def test_a_cursor_keeps_its_commands_now_in_every_batch(coll):
    # The stages after a sort run as each batch is handed out, in the getMore that asks for
    # it: those still see the $$NOW (and $$CLUSTER_TIME) of the aggregate that opened the
    # cursor, as MongoDB's cursor keeps its command's variables.
    coll.insert_many([{"_id": i, "s": f"{i:05d}"} for i in range(300)])
    pipeline = [{"$sort": {"s": -1}}, {"$addFields": {"now": "$$NOW", "clock": "$$CLUSTER_TIME"}}]
    cursor = coll.aggregate(pipeline, batchSize=10)
    first = next(cursor)
    time.sleep(0.05)
    rest = list(cursor)
    assert len(rest) == 299
    assert {d["now"] for d in rest} == {first["now"]}
    assert {d["clock"] for d in rest} == {first["clock"]}
