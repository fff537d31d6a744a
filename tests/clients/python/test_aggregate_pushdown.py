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


# ----------------------------------------------------------------- $group and $count in SQL
#
# The stage right after the leading read runs in the store's statement when that is exact:
# a `$count`, or a `$group` by a constant counting documents, from SQL's COUNT(*) (both
# backends); any other `$group` folded inside SQLite's statement. Every case runs pushed and
# behind the no-op first stage, and the two answers must be the same BSON bytes (types
# included: pymongo alone would read Int64(5) == 5 == 5.0).

import datetime  # noqa: E402

from bson import Decimal128, Int64, ObjectId  # noqa: E402
from bson.codec_options import CodecOptions  # noqa: E402
from bson.raw_bson import RawBSONDocument  # noqa: E402

RAW = CodecOptions(document_class=RawBSONDocument)

OID_A = ObjectId("64b000000000000000000001")
OID_B = ObjectId("64b000000000000000000002")
WHEN = datetime.datetime(2024, 5, 1, 12, 0, 0)

# Keys that are equal under BSON comparison (one group) and keys that only look alike.
KEYS = [
    1, 1.0, Int64(1), Decimal128("1"), Decimal128("1.00"),
    0.1, Decimal128("0.1"), Decimal128("0.1000000000000000000000000000000001"),
    2**53 + 1, Int64(2**53), float(2**53),
    "1", None, OID_A, OID_B, WHEN, True, False,
    {"a": 1, "b": 2}, {"b": 2, "a": 1}, [1, 2], [1.0, 2], [],
    "missing",  # the document has no `k` at all: grouped with null
]
VALUES = [
    2**31 - 1, 2**31 - 1, 5, Int64(7), 2.5, Decimal128("0.1"), -3, None, "text",
    [1, 2], {"x": 1}, float("nan"), Int64(2**62), 2**31 - 1, "missing",
]


def mixed_documents(n: int) -> list[dict]:
    docs = []
    for i in range(n):
        doc = {"_id": i, "i": i, "grp": i % 4}
        key = KEYS[i % len(KEYS)]
        if key != "missing":
            doc["k"] = key
        value = VALUES[(i * 7) % len(VALUES)]
        if value != "missing":
            doc["v"] = value
        docs.append(doc)
    return docs


@pytest.fixture
def mixed(db):
    coll = db["mixed"]
    coll.create_index([("grp", 1), ("i", -1)], name="grp_1_i_-1")
    coll.insert_many(mixed_documents(600))
    return coll


ACCUMULATORS = {
    "n": {"$sum": 1},
    "c": {"$count": {}},
    "s": {"$sum": "$v"},
    "a": {"$avg": "$v"},
    "mn": {"$min": "$v"},
    "mx": {"$max": "$v"},
    "f": {"$first": "$v"},
    "l": {"$last": "$v"},
    "fi": {"$first": "$_id"},
    "li": {"$last": "$_id"},
}

GROUP_PIPELINES = [
    [{"$group": {"_id": "$k", **ACCUMULATORS}}],
    [{"$group": {"_id": "$v", "n": {"$sum": 1}, "ids": {"$push": "$_id"}}}],
    [{"$group": {"_id": {"k": "$k", "g": "$grp"}, "n": {"$sum": 1}, "set": {"$addToSet": "$v"}}}],
    [{"$group": {"_id": None, **ACCUMULATORS}}],
    # int32 totals past 2^31 - 1 become int64 (a group of 2^31 - 1 values).
    [{"$match": {"v": 2**31 - 1}}, {"$group": {"_id": "$grp", "s": {"$sum": "$v"}}}],
    [{"$match": {"v": {"$type": "int"}}}, {"$group": {"_id": None, "s": {"$sum": "$v"}}}],
    # Index-ordered input (descending `i` within grp 3): $first/$last follow that order.
    [{"$match": {"grp": 3}}, {"$sort": {"i": -1}}, {"$group": {"_id": "$k", "f": {"$first": "$i"}, "l": {"$last": "$i"}}}],
    [{"$match": {"grp": 3}}, {"$sort": {"i": -1}}, {"$skip": 5}, {"$limit": 40},
     {"$group": {"_id": "$k", "f": {"$first": "$i"}, "l": {"$last": "$i"}, "n": {"$sum": 1}}}],
    # A residual filter with skip and limit, re-applied before grouping (in SQLite's fold).
    [{"$match": {"i": {"$mod": [3, 1]}}}, {"$skip": 7}, {"$limit": 150},
     {"$group": {"_id": "$k", "n": {"$sum": 1}, "f": {"$first": "$i"}, "l": {"$last": "$i"}}}],
    # A residual filter evaluating expressions, and a computed key: streamed through Rust.
    [{"$match": {"$expr": {"$gt": ["$i", 100]}}}, {"$skip": 7}, {"$limit": 300},
     {"$group": {"_id": "$k", "n": {"$sum": 1}, "f": {"$first": "$i"}, "l": {"$last": "$i"}}}],
    [{"$group": {"_id": {"$type": "$v"}, "n": {"$sum": 1}, "s": {"$sum": "$v"}}}],
    # Top/bottom read their sort keys from the decoded document.
    [{"$group": {"_id": "$grp", "top": {"$top": {"sortBy": {"i": -1}, "output": "$v"}}}}],
    # Stages after the group run in Rust over the groups.
    [{"$group": {"_id": "$grp", "s": {"$sum": "$i"}}}, {"$sort": {"s": -1}}, {"$limit": 2}],
    # Nothing matches: no groups.
    [{"$match": {"i": -1}}, {"$group": {"_id": "$k", "n": {"$sum": 1}}}],
    # Counted: a constant key and accumulators that follow from the count.
    [{"$group": {"_id": None, "n": {"$sum": 1}}}],
    [{"$match": {"grp": {"$in": [1, 2]}}}, {"$group": {"_id": 1, "n": {"$sum": 1}, "c": {"$count": {}},
     "big": {"$sum": 2**31 - 1}, "long": {"$sum": Int64(3)}, "mn": {"$min": "x"}, "f": {"$first": None}}}],
    [{"$match": {"grp": 2}}, {"$skip": 10}, {"$limit": 20}, {"$group": {"_id": None, "n": {"$sum": 1}}}],
    [{"$match": {"i": -1}}, {"$group": {"_id": None, "n": {"$sum": 1}}}],
    [{"$match": {"grp": 0}}, {"$count": "total"}],
    [{"$match": {"i": -1}}, {"$count": "total"}],
    [{"$count": "total"}, {"$project": {"twice": {"$multiply": ["$total", 2]}}}],
    # Not counted (a double constant sums with rounding): folded or streamed, still exact.
    [{"$group": {"_id": None, "n": {"$sum": 0.1}}}],
]


def both_ways(coll, pipeline) -> tuple[list[bytes], list[bytes]]:
    raw = coll.with_options(codec_options=RAW)
    pushed = [d.raw for d in raw.aggregate(pipeline)]
    in_rust = [d.raw for d in raw.aggregate([NO_PUSHDOWN] + pipeline)]
    return pushed, in_rust


@pytest.mark.parametrize("pipeline", GROUP_PIPELINES, ids=[str(i) for i in range(len(GROUP_PIPELINES))])
def test_grouped_pipelines_give_the_same_bson_pushed_and_in_rust(mixed, pipeline):
    pushed, in_rust = both_ways(mixed, pipeline)
    assert pushed == in_rust


def test_group_keys_by_bson_equality(mixed):
    groups = {repr(d["_id"]): d["n"] for d in mixed.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1}}}])}
    per_key = 600 // len(KEYS)
    # 1, 1.0, NumberLong(1), NumberDecimal("1"), NumberDecimal("1.00") are one group (the
    # first document's key is its _id); 0.1 (double) and the two decimals are three.
    assert groups["1"] == 5 * per_key
    assert groups["0.1"] == per_key
    assert groups["Decimal128('0.1')"] == per_key
    assert groups["Decimal128('0.1000000000000000000000000000000001')"] == per_key
    # 2^53 + 1 differs from 2^53 (int64 and double), which are one group.
    assert groups[repr(Int64(2**53 + 1))] == per_key
    assert groups[repr(Int64(2**53))] == 2 * per_key
    # null and missing are one group; field order makes documents differ; [1, 2] == [1.0, 2].
    assert groups["None"] == 2 * per_key
    assert groups["{'a': 1, 'b': 2}"] == per_key and groups["{'b': 2, 'a': 1}"] == per_key
    assert groups["[1, 2]"] == 2 * per_key
    assert groups[repr(OID_A)] == per_key and groups[repr(WHEN)] == per_key


def test_int32_sum_overflows_to_int64_in_both_ways(db):
    coll = db["overflow"]
    coll.insert_many([{"_id": i, "v": 2**31 - 1} for i in range(3)])
    pipeline = [{"$group": {"_id": None, "s": {"$sum": "$v"}, "n": {"$sum": 2**31 - 1}}}]
    pushed, in_rust = both_ways(coll, pipeline)
    assert pushed == in_rust
    [doc] = coll.with_options(codec_options=CodecOptions()).aggregate(pipeline)
    assert doc["s"] == 3 * (2**31 - 1) and isinstance(doc["s"], Int64)
    assert doc["n"] == 3 * (2**31 - 1) and isinstance(doc["n"], Int64)


def test_grouping_an_empty_or_missing_collection(db):
    db.create_collection("empty")
    for name in ("empty", "never_created"):
        for pipeline in ([{"$group": {"_id": "$k", "n": {"$sum": 1}}}],
                         [{"$group": {"_id": None, "n": {"$sum": 1}}}],
                         [{"$count": "n"}]):
            assert list(db[name].aggregate(pipeline)) == []
            assert list(db[name].aggregate([NO_PUSHDOWN] + pipeline)) == []


def test_count_documents_is_a_sql_count(db, mixed):
    assert mixed.count_documents({}) == 600
    assert mixed.count_documents({"grp": 1}) == 150
    assert mixed.count_documents({"grp": 1}, skip=140) == 10
    assert mixed.count_documents({"grp": 1}, skip=10, limit=25) == 25
    assert mixed.count_documents({"i": {"$gte": 590}}, limit=100) == 10
    # pymongo's count_documents is this pipeline: $match, then a counted $group.
    pipeline = [{"$match": {"grp": 1}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]
    details = explain_details(db, "mixed", pipeline)
    assert details["stagesInSql"] == ["$match", "$group"]


def explain_details(db, name, pipeline) -> dict:
    plan = db.command({"explain": {"aggregate": name, "pipeline": pipeline, "cursor": {}}})
    return plan["queryPlanner"]["winningPlan"]["docgate"]


def test_explain_names_the_group_where_the_store_runs_it(db, mixed):
    by_field = [{"$match": {"grp": 3}}, {"$group": {"_id": "$k", "s": {"$sum": "$v"}}}]
    details = explain_details(db, "mixed", by_field)
    # Folded inside SQLite's statement; on PostgreSQL a GROUP BY (whose values here include
    # decimals and NaN, so it hands the rows to Rust's grouping: the same answer).
    assert details["stagesInSql"] == ["$match", "$group"]
    # A computed key is evaluated on the compute pool, not in the store's statement.
    computed = [{"$group": {"_id": {"$type": "$v"}, "n": {"$sum": 1}}}]
    assert explain_details(db, "mixed", computed)["stagesInSql"] == []
    counted = [{"$match": {"grp": 3}}, {"$count": "n"}]
    assert explain_details(db, "mixed", counted)["stagesInSql"] == ["$match", "$count"]
    # A residual filter: a count would under- or over-count, so it is not counted.
    residual = [{"$match": {"$expr": {"$gt": ["$i", 3]}}}, {"$count": "n"}]
    assert "$count" not in explain_details(db, "mixed", residual)["stagesInSql"]
    # Behind the no-op stage nothing after the read is pushed.
    assert explain_details(db, "mixed", [NO_PUSHDOWN] + by_field)["stagesInSql"] == []
