"""Aggregation pushdown through pymongo: a pipeline's leading `$match`, `$sort`, `$skip` and
`$limit` run as one SQL read (index range, index order, limit in SQL), and give the same
documents as the same stages run in Rust.

"Pushdown off" is the same pipeline behind a no-op first stage (`$unset` of a field no
document has), which ends the leading read before it starts, so every stage runs in Rust
over the whole collection. `explain` names the stages that ran as SQL.
"""

from __future__ import annotations

import pytest

NO_PUSHDOWN = {"$unset": "no_such_field"}

PIPELINES = [
    [{"$match": {"grp": 3}}, {"$sort": {"r": -1}}, {"$limit": 5}],
    [{"$match": {"grp": 3}}, {"$sort": {"r": 1}}, {"$skip": 4}, {"$limit": 3}],
    [{"$match": {"r": {"$gte": 100, "$lt": 140}}}, {"$sort": {"r": 1}}, {"$skip": 2}],
    [{"$sort": {"r": -1}}, {"$limit": 4}, {"$project": {"_id": 0, "r": 1}}],
    [{"$match": {"grp": 3, "free": 0}}, {"$sort": {"grp": 1, "r": -1}}, {"$limit": 3}],
    # $limit then $skip: the first 10, then skip 7 of them.
    [{"$match": {"grp": {"$in": [1, 2]}}}, {"$sort": {"r": 1}}, {"$limit": 10}, {"$skip": 7}],
    [{"$match": {"grp": 3}}, {"$skip": 5}, {"$limit": 2}, {"$skip": 1}, {"$limit": 5}],
    # Unindexed sort (in Rust either way), then grouping.
    [{"$match": {"free": {"$lt": 3}}}, {"$sort": {"free": -1, "_id": 1}}, {"$limit": 6}],
    [{"$match": {"grp": 3}}, {"$group": {"_id": "$free", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
    [{"$match": {"grp": 3}}, {"$sort": {"r": -1}}, {"$limit": 0 + 1}, {"$count": "n"}],
]


@pytest.fixture
def people(db):
    coll = db["people"]
    coll.create_index([("grp", 1), ("r", 1)], name="grp_1_r_1")
    coll.create_index([("r", -1)], name="r_-1")
    coll.insert_many(
        [{"_id": i, "grp": i % 10, "r": i, "free": i % 7, "pad": "x" * 20} for i in range(500)]
    )
    return coll


@pytest.mark.parametrize("pipeline", PIPELINES, ids=[str(i) for i in range(len(PIPELINES))])
def test_pushed_and_unpushed_pipelines_agree(people, pipeline):
    pushed = list(people.aggregate(pipeline))
    in_rust = list(people.aggregate([NO_PUSHDOWN] + pipeline))
    assert pushed == in_rust
    assert pushed, "every case returns something"


def test_match_sort_limit_is_one_index_walk(db, people):
    pipeline = [{"$match": {"grp": 3}}, {"$sort": {"r": -1}}, {"$limit": 5}]
    assert [d["_id"] for d in people.aggregate(pipeline)] == [493, 483, 473, 463, 453]
    plan = db.command({"explain": {"aggregate": "people", "pipeline": pipeline, "cursor": {}}})
    winning = plan["queryPlanner"]["winningPlan"]
    details = winning["docgate"]
    assert details["stagesInSql"] == ["$match", "$sort", "$limit"]
    assert details["pushedLimit"] == 5
    assert details["inMemorySort"] is False
    stages = []
    node = winning
    while node:
        stages.append(node.get("stage"))
        node = node.get("inputStage")
    assert "SORT" not in stages
    assert "IXSCAN" in stages


def test_explain_says_what_stayed_in_rust(db, people):
    pipeline = [{"$match": {"free": 1}}, {"$sort": {"free": 1}}, {"$limit": 2}]
    plan = db.command({"explain": {"aggregate": "people", "pipeline": pipeline, "cursor": {}}})
    # No index on `free`: the filter is re-checked and the sort runs in Rust.
    assert plan["queryPlanner"]["winningPlan"]["docgate"]["stagesInSql"] == []
    plan = db.command({"explain": {"aggregate": "people", "pipeline": [NO_PUSHDOWN] + pipeline, "cursor": {}}})
    assert plan["queryPlanner"]["winningPlan"]["docgate"]["stagesInSql"] == []


# ----------------------------------------------------------------- streaming pipelines


@pytest.mark.parametrize("batch_size", [1, 3, 7, 101])
def test_per_document_stages_stream_batch_after_batch(db, batch_size):
    """A pipeline whose stages look at one document at a time runs chunk by chunk behind a
    cursor; every batch size gives the whole result, in order, each document once."""
    coll = db["stream"]
    coll.insert_many([{"_id": i, "tags": list(range(i % 4)), "city": f"c{i % 3}"} for i in range(300)])
    db["cities"].insert_many([{"_id": f"c{i}", "name": f"City {i}"} for i in range(3)])
    pipeline = [
        {"$match": {"_id": {"$gte": 10}}},
        {"$match": {"$expr": {"$ne": [{"$mod": ["$_id", 5]}, 0]}}},
        {"$unwind": "$tags"},
        {"$lookup": {"from": "cities", "localField": "city", "foreignField": "_id", "as": "c"}},
        {"$project": {"_id": 1, "tag": "$tags", "name": {"$first": "$c.name"}}},
    ]
    got = list(coll.aggregate(pipeline, batchSize=batch_size))
    expected = [
        {"_id": i, "tag": t, "name": f"City {i % 3}"}
        for i in range(10, 300)
        if i % 5 != 0
        for t in range(i % 4)
    ]
    assert got == expected


def test_a_streaming_aggregate_limit_and_skip_in_the_read(db):
    coll = db["stream2"]
    coll.insert_many([{"_id": i, "v": i * 2} for i in range(1000)])
    pipeline = [{"$skip": 100}, {"$limit": 250}, {"$set": {"w": {"$add": ["$v", 1]}}}]
    got = list(coll.aggregate(pipeline, batchSize=16))
    assert [d["_id"] for d in got] == list(range(100, 350))
    assert all(d["w"] == d["v"] + 1 for d in got)
    # An empty result closes at once, and a collection nobody created is empty.
    assert list(coll.aggregate([{"$match": {"v": -1}}, {"$project": {"v": 1}}])) == []
    assert list(db["missing"].aggregate([{"$project": {"v": 1}}])) == []


def test_a_group_after_per_document_stages_reads_its_input_in_chunks(db):
    """`$group` after `$match`/`$unwind`/`$set` is fed chunk by chunk (holding only its
    groups); its result is the same as MongoDB's for the whole input."""
    coll = db["grouped"]
    coll.insert_many([{"_id": i, "k": i % 7, "tags": list(range(i % 3)), "v": i} for i in range(25_000)])
    pipeline = [
        {"$match": {"_id": {"$gte": 100}}},
        {"$unwind": "$tags"},
        {"$set": {"w": {"$multiply": ["$v", 2]}}},
        {"$group": {"_id": {"k": "$k", "t": "$tags"}, "n": {"$sum": 1}, "total": {"$sum": "$w"}, "first": {"$first": "$_id"}}},
        {"$sort": {"_id.k": 1, "_id.t": 1}},
    ]
    got = list(coll.aggregate(pipeline))
    expected = {}
    for i in range(100, 25_000):
        for t in range(i % 3):
            key = (i % 7, t)
            n, total, first = expected.get(key, (0, 0, i))
            expected[key] = (n + 1, total + 2 * i, first)
    assert got == [
        {"_id": {"k": k, "t": t}, "n": n, "total": total, "first": first}
        for (k, t), (n, total, first) in sorted(expected.items())
    ]
    # The same through $out: the groups are written.
    list(coll.aggregate(pipeline + [{"$out": "grouped_out"}]))
    assert db["grouped_out"].count_documents({}) == len(expected)
