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
