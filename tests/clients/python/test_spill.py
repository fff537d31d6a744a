"""Blocking stages past their memory limit spill to temporary files, through pymongo.

MongoDB 7.0 lets a blocking sort or `$group` past 100 MB write temporary files by default
(`allowDiskUseByDefault`) and with `allowDiskUse: true`; `allowDiskUse: false` answers 292
QueryExceededMemoryLimitNoDiskUseAllowed. The server here holds 64 KB per stage
(`--blocking-stage-memory-limit-bytes`) and writes its files under its own `--temp-dir`,
so a few hundred documents of ~1 KB cross the limit many times and the test can see the
files come and go (they have no name: the server's open descriptors show them): while a
cursor over a spilled sort is open they are there; once it is exhausted, killed, or its
client has gone (pymongo ends its sessions), they are not.
"""

from __future__ import annotations

import gc
import os
import time
from decimal import Decimal

import pytest
from bson import Decimal128, Int64
from pymongo.errors import OperationFailure

from conftest import DocgateServer

LIMIT = 64_000
COUNT = 600


@pytest.fixture(scope="module")
def spill_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("spill-files")


@pytest.fixture(scope="module")
def spilling_server(tmp_path_factory, spill_dir):
    srv = DocgateServer(
        tmp_path_factory.mktemp("spill"),
        extra_args=[
            "--blocking-stage-memory-limit-bytes",
            str(LIMIT),
            "--temp-dir",
            str(spill_dir),
        ],
        fresh_storage=True,
    )
    srv.start()
    SERVERS[spill_dir] = srv
    try:
        yield srv
    finally:
        srv.stop()


# The server whose runs go to each spill directory.
SERVERS: dict = {}


def spill_files(spill_dir):
    """The run files docgate holds open in `spill_dir`. They have no name (each is unlinked as
    it is created, so nothing is ever left behind, even by `kill -9`): the directory itself
    stays empty, and the runs show as the server process's open file descriptors."""
    assert [p.name for p in spill_dir.iterdir()] == [], "no named file in the spill directory"
    pid = SERVERS[spill_dir].proc.pid
    inside = os.path.realpath(spill_dir) + os.sep
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith(inside):
            found.append(target)
    return sorted(found)


def wait_for_no_spill_files(spill_dir, seconds=10.0):
    """The files of a cursor ended by another request (endSessions) may go a moment later."""
    deadline = time.monotonic() + seconds
    while spill_files(spill_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    return spill_files(spill_dir)


def number(i):
    """Mixed numeric types with ties across types: 3, 3.0, Int64(3) are one value."""
    value = (i * 7919) % 97
    kind = i % 3
    if kind == 0:
        return value
    if kind == 1:
        return float(value)
    return Int64(value)


@pytest.fixture
def big(spilling_server, request, spill_dir):
    client = spilling_server.client()
    db = client[f"spill_{request.node.name[:40]}"]
    coll = db["big"]
    coll.insert_many(
        [
            {"_id": i, "n": number(i), "g": number(i) % 5, "pad": "x" * 1000}
            for i in range(COUNT)
        ]
    )
    yield coll
    client.drop_database(db.name)
    client.close()
    assert wait_for_no_spill_files(spill_dir) == []


def expected_order(docs):
    """MongoDB's order for {n: 1, _id: -1}: numbers compare by value whatever their type."""
    return [d["_id"] for d in sorted(docs, key=lambda d: (int(d["n"]), -d["_id"]))]


def all_docs(coll):
    return list(coll.find({}, sort=[("_id", 1)]))


SORT = [("n", 1), ("_id", -1)]


def spill_metrics(coll):
    query = coll.database.client.admin.command("serverStatus")["metrics"]["query"]
    return query["sort"]["spillToDisk"], query["group"]["spills"]


def test_a_find_sort_past_the_limit_spills_and_returns_every_document_in_order(big, spill_dir):
    expected = expected_order(all_docs(big))
    sorts_before, _ = spill_metrics(big)
    for options in ({}, {"allow_disk_use": True}):
        cursor = big.find({}, sort=SORT, batch_size=50, **options)
        first = next(cursor)
        # 600 KB sorted under a 64 KB limit: runs on disk while the cursor is open.
        assert len(spill_files(spill_dir)) > 1
        got = [first["_id"]] + [d["_id"] for d in cursor]
        assert got == expected
        assert spill_files(spill_dir) == [], "the files go when the cursor is exhausted"
    assert spill_metrics(big)[0] == sorts_before + 2


def test_projection_skip_and_filters_apply_to_the_spilled_sort(big):
    docs = all_docs(big)
    wanted = [d for d in docs if d["g"] != 2]
    expected = expected_order(wanted)[13:]
    got = list(big.find({"g": {"$ne": 2}}, {"pad": 0}, sort=SORT, skip=13, batch_size=70))
    assert [d["_id"] for d in got] == expected
    assert all(set(d) == {"_id", "n", "g"} for d in got)


def test_a_top_k_sort_streams_and_spills_only_what_it_keeps(big, spill_dir):
    expected = expected_order(all_docs(big))
    sorts_before, _ = spill_metrics(big)
    # Ten documents kept: they fit the limit, nothing is written, the order is MongoDB's.
    few = list(big.find({}, sort=SORT, skip=3, limit=10))
    assert [d["_id"] for d in few] == expected[3:13]
    assert spill_metrics(big)[0] == sorts_before
    # 300 KB kept under a 64 KB limit: sorted runs of at most skip + limit documents each.
    many = big.find({}, sort=SORT, skip=13, limit=300, batch_size=40)
    first = next(many)
    assert spill_files(spill_dir)
    got = [first["_id"]] + [d["_id"] for d in many]
    assert got == expected[13:313]
    assert spill_files(spill_dir) == []
    assert spill_metrics(big)[0] == sorts_before + 1
    with pytest.raises(OperationFailure) as failure:
        list(big.find({}, sort=SORT, limit=300, allow_disk_use=False))
    assert failure.value.code == 292
    # The same through an aggregate's leading $sort + $limit.
    pipeline = [{"$sort": {"n": 1, "_id": -1}}, {"$skip": 13}, {"$limit": 300}, {"$project": {"pad": 0}}]
    assert [d["_id"] for d in big.aggregate(pipeline)] == expected[13:313]


def test_disk_use_refused_still_answers_292(big):
    with pytest.raises(OperationFailure) as failure:
        list(big.find({}, sort=SORT, allow_disk_use=False))
    assert failure.value.code == 292
    assert failure.value.details["codeName"] == "QueryExceededMemoryLimitNoDiskUseAllowed"
    for pipeline in (
        [{"$sort": {"n": 1, "_id": -1}}],
        [{"$set": {"m": 1}}, {"$sort": {"n": 1, "_id": -1}}],
        [{"$group": {"_id": "$_id", "pads": {"$push": "$pad"}}}],
    ):
        with pytest.raises(OperationFailure) as failure:
            list(big.aggregate(pipeline, allowDiskUse=False))
        assert failure.value.code == 292, pipeline


def test_a_killed_cursor_takes_its_files_with_it(big, spill_dir):
    cursor = big.find({}, sort=SORT, batch_size=10)
    next(cursor)
    assert spill_files(spill_dir)
    cursor.close()  # killCursors
    assert wait_for_no_spill_files(spill_dir) == []


def test_a_client_that_goes_away_takes_its_files_with_it(spilling_server, big, spill_dir):
    other = spilling_server.client()
    cursor = other[big.database.name]["big"].find({}, sort=SORT, batch_size=10)
    next(cursor)
    assert spill_files(spill_dir)
    # An application that drops its cursor and closes its client: pymongo kills the
    # cursor and ends the session on close. (A cursor nobody kills outlives its connection,
    # as in MongoDB, until the cursor timeout closes it; its files go then.)
    del cursor
    gc.collect()
    other.close()
    assert wait_for_no_spill_files(spill_dir) == []


def test_aggregate_sorts_past_the_limit_spill(big, spill_dir):
    expected = expected_order(all_docs(big))
    # The leading $sort streams into the external sort; the $project runs as it drains.
    leading = [{"$match": {}}, {"$sort": {"n": 1, "_id": -1}}, {"$project": {"pad": 0}}]
    cursor = big.aggregate(leading, batchSize=20)
    first = next(cursor)
    assert spill_files(spill_dir)
    got = [first] + list(cursor)
    assert [d["_id"] for d in got] == expected
    assert "pad" not in got[0]
    assert spill_files(spill_dir) == []
    # A $sort after a stage that is not a read: sorted through runs inside the pipeline.
    inner = [{"$set": {"m": 1}}, {"$sort": {"n": 1, "_id": -1}}, {"$skip": 5}]
    for options in ({}, {"allowDiskUse": True}):
        got = [d["_id"] for d in big.aggregate(inner, **options)]
        assert got == expected[5:]
    assert spill_files(spill_dir) == []
    # A leading $sort before a blocking stage: the read's sort goes through runs, and the
    # $group sees the documents in sorted order.
    sorts_before, _ = spill_metrics(big)
    sorted_then_grouped = [
        {"$sort": {"n": 1, "_id": -1}},
        {"$group": {"_id": None, "ids": {"$push": "$_id"}}},
    ]
    assert list(big.aggregate(sorted_then_grouped)) == [{"_id": None, "ids": expected}]
    assert spill_metrics(big)[0] == sorts_before + 1
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(sorted_then_grouped, allowDiskUse=False))
    assert failure.value.code == 292


def python_groups(docs):
    groups = {}
    for d in docs:  # natural order is insertion order
        key = int(d["g"])
        group = groups.setdefault(key, {"count": 0, "total": 0, "ids": []})
        group["count"] += 1
        group["total"] += int(d["n"])
        group["ids"].append(d["_id"])
    return groups


def test_group_past_the_limit_gives_the_groups_of_an_unlimited_one(big, spill_dir):
    docs = all_docs(big)
    expected = python_groups(docs)
    # Group keys of mixed numeric types (3, 3.0, Int64(3) are one group); each group
    # pushes its _ids in input order and keeps its pads, so the groups pass the limit.
    pipeline = [
        {
            "$group": {
                "_id": "$g",
                "count": {"$sum": 1},
                "total": {"$sum": "$n"},
                "ids": {"$push": "$_id"},
                "pads": {"$push": "$pad"},
                "first": {"$first": "$_id"},
                "last": {"$last": "$_id"},
            }
        }
    ]
    _, groups_before = spill_metrics(big)
    for options in ({}, {"allowDiskUse": True}):
        got = {int(d["_id"]): d for d in big.aggregate(pipeline, **options)}
        assert sorted(got) == sorted(expected)
        for key, group in expected.items():
            assert got[key]["count"] == group["count"]
            assert got[key]["total"] == group["total"]
            assert got[key]["ids"] == group["ids"]
            assert got[key]["first"] == group["ids"][0]
            assert got[key]["last"] == group["ids"][-1]
            assert len(got[key]["pads"]) == group["count"]
    assert spill_metrics(big)[1] == groups_before + 2
    # One group per document: many groups, each small, past the limit together.
    per_document = [
        {"$group": {"_id": "$_id", "pad": {"$first": "$pad"}, "n": {"$sum": "$n"}}},
        {"$sort": {"_id": 1}},
    ]
    got = list(big.aggregate(per_document))
    assert spill_metrics(big)[1] == groups_before + 3
    assert [d["_id"] for d in got] == [d["_id"] for d in docs]
    assert [d["n"] for d in got] == [int(d["n"]) for d in docs]
    assert spill_files(spill_dir) == []


def test_bucket_past_the_limit_spills_like_a_group(big):
    _, groups_before = spill_metrics(big)
    pipeline = [
        {
            "$bucket": {
                "groupBy": "$n",
                "boundaries": [0, 30, 60, 97],
                "output": {"count": {"$sum": 1}, "pads": {"$push": "$pad"}, "ids": {"$push": "$_id"}},
            }
        }
    ]
    got = list(big.aggregate(pipeline))
    assert spill_metrics(big)[1] == groups_before + 1
    docs = all_docs(big)
    for bucket, (low, high) in zip(got, [(0, 30), (30, 60), (60, 97)]):
        ids = [d["_id"] for d in docs if low <= int(d["n"]) < high]
        assert bucket["_id"] == low and bucket["ids"] == ids and bucket["count"] == len(ids)
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(pipeline, allowDiskUse=False))
    assert failure.value.code == 292


def test_decimal_and_double_keys_group_as_one(big):
    big.insert_many(
        [
            {"_id": "d1", "g": Decimal128(Decimal("2.0")), "n": 1},
            {"_id": "d2", "g": 2.0, "n": 1},
        ]
    )
    got = {
        d["_id"]: d["c"]
        for d in big.aggregate([{"$group": {"_id": "$g", "c": {"$sum": 1}, "p": {"$push": "$pad"}}}])
    }
    counts = python_groups([d for d in all_docs(big) if isinstance(d["_id"], int)])
    assert got[2] == counts[2]["count"] + 2


def test_bucket_auto_past_the_limit_sorts_through_runs(big):
    docs = all_docs(big)
    values = sorted(int(d["n"]) for d in docs)
    sorts_before, _ = spill_metrics(big)
    pipeline = [{"$bucketAuto": {"groupBy": "$n", "buckets": 4, "output": {"count": {"$sum": 1}}}}]
    got = list(big.aggregate(pipeline))
    assert spill_metrics(big)[0] == sorts_before + 1
    assert sum(b["count"] for b in got) == COUNT
    assert got[0]["_id"]["min"] == values[0] and got[-1]["_id"]["max"] == values[-1]
    # Buckets follow each other: each starts where the one before it ends.
    for before, after in zip(got, got[1:]):
        assert before["_id"]["max"] == after["_id"]["min"]
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(pipeline, allowDiskUse=False))
    assert failure.value.code == 292


def test_set_window_fields_past_the_limit_windows_one_partition_at_a_time(big):
    docs = all_docs(big)
    sorts_before, _ = spill_metrics(big)
    # 20 partitions of 30 documents (~30 KB each, under the limit; 600 KB together, over it).
    pipeline = [
        {
            "$setWindowFields": {
                "partitionBy": {"$mod": ["$_id", 20]},
                "sortBy": {"n": 1},
                "output": {"rank": {"$rank": {}}},
            }
        },
        {"$project": {"pad": 0}},
    ]
    got = list(big.aggregate(pipeline))
    assert spill_metrics(big)[0] == sorts_before + 1
    expected = []
    for p in range(20):
        members = sorted((d for d in docs if d["_id"] % 20 == p), key=lambda d: (int(d["n"]), d["_id"]))
        for d in members:
            rank = 1 + sum(1 for o in members if int(o["n"]) < int(d["n"]))
            expected.append((d["_id"], rank))
    assert [(d["_id"], d["rank"]) for d in got] == expected
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(pipeline, allowDiskUse=False))
    assert failure.value.code == 292


def test_one_window_partition_past_the_limit_is_windowed_and_a_facet_is_refused(big):
    # A $setWindowFields partition past the limit (here the whole input: no partitionBy) is
    # windowed in place with the right result; 292 without disk use.
    docs = all_docs(big)
    pipeline = [
        {
            "$setWindowFields": {
                "sortBy": {"n": 1},
                "output": {
                    "r": {"$rank": {}},
                    "running": {"$sum": 1, "window": {"documents": ["unbounded", "current"]}},
                },
            }
        },
        {"$project": {"pad": 0}},
    ]
    got = list(big.aggregate(pipeline))
    ordered = sorted(docs, key=lambda d: (int(d["n"]), d["_id"]))
    assert [d["_id"] for d in got] == [d["_id"] for d in ordered]
    assert [d["running"] for d in got] == list(range(1, COUNT + 1))
    for d in got:
        assert d["r"] == 1 + sum(1 for o in docs if int(o["n"]) < int(d["n"]))
    unordered = [{"$setWindowFields": {"output": {"n": {"$count": {}}}}}, {"$project": {"n": 1}}]
    assert [d["n"] for d in big.aggregate(unordered)] == [COUNT] * COUNT
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(pipeline, allowDiskUse=False))
    assert failure.value.code == 292
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(unordered, allowDiskUse=False))
    assert failure.value.code == 292
    # A $facet's document past the limit is MongoDB's 4031700, whatever allowDiskUse says.
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate([{"$facet": {"all": [{"$match": {}}]}}]))
    assert failure.value.code == 4031700
    counted = list(big.aggregate([{"$facet": {"n": [{"$count": "n"}]}}]))
    assert counted == [{"n": [{"n": COUNT}]}]


def sort_stage(stage):
    while stage.get("stage") != "SORT":
        stage = stage["inputStage"]
    return stage


def test_explain_reports_a_sort_that_spilled(big):
    db = big.database
    find = {"find": "big", "filter": {}, "sort": {"n": 1, "_id": -1}}
    explained = db.command({"explain": find, "verbosity": "executionStats"})
    stats = explained["executionStats"]
    assert stats["nReturned"] == COUNT
    assert sort_stage(stats["executionStages"]) | {} == {
        **sort_stage(stats["executionStages"]),
        "usedDisk": True,
        "memLimit": LIMIT,
    }
    small = db.command(
        {"explain": {**find, "filter": {"_id": {"$lt": 10}}}, "verbosity": "executionStats"}
    )
    assert sort_stage(small["executionStats"]["executionStages"])["usedDisk"] is False
    aggregate = {"aggregate": "big", "pipeline": [{"$sort": {"n": 1}}], "cursor": {}}
    explained = db.command({"explain": aggregate, "verbosity": "executionStats"})
    assert sort_stage(explained["executionStats"]["executionStages"])["usedDisk"] is True
    with pytest.raises(OperationFailure) as failure:
        db.command({"explain": {**find, "allowDiskUse": False}, "verbosity": "executionStats"})
    assert failure.value.code == 292


def start_own_server(tmp_path, *extra_args):
    """A server of the test's own (which stops or kills it), spilling to its own directory."""
    spill = tmp_path / "spill"
    spill.mkdir()
    srv = DocgateServer(
        tmp_path,
        extra_args=["--blocking-stage-memory-limit-bytes", str(LIMIT), "--temp-dir", str(spill), *extra_args],
        fresh_storage=True,
    )
    srv.start()
    SERVERS[spill] = srv
    return srv, spill


def open_spilled_cursor(client, db_name):
    """A find whose sort spilled, its first document read: its runs are open."""
    coll = client[db_name].big
    coll.insert_many([{"_id": i, "n": number(i), "pad": "x" * 1000} for i in range(COUNT)])
    cursor = coll.find({}, sort=SORT, batch_size=10)
    next(cursor)
    return cursor


def test_a_cursor_that_times_out_takes_its_files_with_it(tmp_path):
    srv, spill = start_own_server(tmp_path, "--cursor-timeout-ms", "1000")
    try:
        client = srv.client()
        cursor = open_spilled_cursor(client, "spill_timeout")
        assert spill_files(spill)
        # Nobody reads it for longer than --cursor-timeout-ms: the server closes it.
        assert wait_for_no_spill_files(spill, seconds=20) == []
        with pytest.raises(OperationFailure) as failure:
            list(cursor)
        assert failure.value.code == 43  # CursorNotFound
        client.close()
    finally:
        srv.stop()


def test_a_text_score_sort_past_the_limit_spills(spilling_server, spill_dir):
    client = spilling_server.client()
    coll = client["spill_text"]["notes"]
    coll.insert_many(
        [
            {"_id": i, "body": " ".join(["apple"] * (1 + i % 7) + ["pear"] * (i % 3)), "pad": "x" * 1000}
            for i in range(300)
        ]
    )
    coll.create_index([("body", "text")])
    search = {"$text": {"$search": "apple"}}
    score = {"$meta": "textScore"}
    scores = {d["_id"]: d["score"] for d in coll.find(search, {"score": score})}
    assert len(scores) == 300
    expected = sorted(scores, key=lambda i: (-scores[i], i))
    sorts_before, _ = spill_metrics(coll)
    cursor = coll.find(search, {"score": score, "pad": 0}, sort=[("score", score), ("_id", 1)], batch_size=20)
    first = next(cursor)
    # 300 KB sorted by score under a 64 KB limit.
    assert spill_files(spill_dir)
    got = [first] + list(cursor)
    assert [d["_id"] for d in got] == expected
    assert all(set(d) == {"_id", "body", "score"} and d["score"] == scores[d["_id"]] for d in got)
    assert spill_files(spill_dir) == []
    assert spill_metrics(coll)[0] == sorts_before + 1
    # Sorted by score without projecting it: the score is not handed out.
    unprojected = list(coll.find(search, sort=[("score", score), ("_id", 1)], limit=250))
    assert [d["_id"] for d in unprojected] == expected[:250]
    assert all(set(d) == {"_id", "body", "pad"} for d in unprojected)
    pipeline = [{"$match": search}, {"$sort": {"score": score, "_id": 1}}, {"$project": {"s": score}}]
    assert [(d["_id"], d["s"]) for d in coll.aggregate(pipeline)] == [(i, scores[i]) for i in expected]
    client.drop_database("spill_text")
    client.close()


def test_a_killed_server_leaves_no_files_behind(tmp_path):
    srv, spill = start_own_server(tmp_path)
    try:
        client = srv.client()
        open_spilled_cursor(client, "spill_crash")
        assert len(spill_files(spill)) > 1
        srv.proc.kill()  # SIGKILL: no destructor runs
        srv.proc.wait(timeout=10)
        assert list(spill.iterdir()) == [], "a crashed server's runs must not outlive it"
        client.close()
    finally:
        srv.stop()
