"""The memory limit of blocking stages through pymongo. MongoDB 7.0 lets a blocking sort or
`$group` spill to disk past 100 MB by default; a command with `allowDiskUse: false` gets
292 QueryExceededMemoryLimitNoDiskUseAllowed instead. docgate does the same past
`--blocking-stage-memory-limit-bytes` (100 MiB by default, set to 200 KB here so a few
hundred documents cross it); test_spill.py checks what the spilled stages answer and that
their temporary files go."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from conftest import DocgateServer

LIMIT = 200_000


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory):
    srv = DocgateServer(
        tmp_path_factory.mktemp("memory"),
        extra_args=["--blocking-stage-memory-limit-bytes", str(LIMIT)],
        fresh_storage=True,
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def big(limited_server, request):
    client = limited_server.client()
    db = client[f"mem_{request.node.name[:40]}"]
    coll = db["big"]
    # 400 documents of ~1 KB: 400 KB, twice the limit.
    coll.insert_many([{"_id": i, "k": i % 4, "unique": i, "pad": "x" * 1000} for i in range(400)])
    yield coll
    client.drop_database(db.name)
    client.close()


def test_a_sort_in_memory_past_the_limit_answers_292_only_when_disk_use_is_refused(big):
    with pytest.raises(OperationFailure) as failure:
        list(big.find({}, sort=[("pad", 1), ("unique", -1)], allow_disk_use=False))
    assert failure.value.code == 292
    assert failure.value.details["codeName"] == "QueryExceededMemoryLimitNoDiskUseAllowed"
    # MongoDB 7.0's default (and allowDiskUse: true) let the sort go on.
    assert len(list(big.find({}, sort=[("pad", 1), ("unique", -1)]))) == 400
    assert len(list(big.find({}, sort=[("pad", 1), ("unique", -1)], allow_disk_use=True))) == 400


def test_a_top_k_sort_holds_only_its_limit(big):
    # With a limit the sort keeps the first `limit` documents: 10 KB, under the limit.
    docs = list(big.find({}, sort=[("unique", -1)], limit=10, allow_disk_use=False))
    assert [d["_id"] for d in docs] == list(range(399, 389, -1))


def test_an_index_walk_is_not_a_blocking_sort(big):
    big.create_index("unique")
    docs = list(big.find({}, sort=[("unique", 1)], allow_disk_use=False))
    assert len(docs) == 400


def test_aggregate_sort_and_group_past_the_limit(big):
    sort = [{"$addFields": {"n": 1}}, {"$sort": {"pad": 1, "unique": 1}}]
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(sort, allowDiskUse=False))
    assert failure.value.code == 292
    assert len(list(big.aggregate(sort))) == 400
    # A $group holding few groups stays under the limit, whatever its input.
    few = [{"$group": {"_id": "$k", "n": {"$sum": 1}}}]
    assert sorted(d["n"] for d in big.aggregate(few, allowDiskUse=False)) == [100] * 4
    # One group per document, each holding its pad: over the limit.
    many = [{"$group": {"_id": "$unique", "pads": {"$push": "$pad"}}}]
    with pytest.raises(OperationFailure) as failure:
        list(big.aggregate(many, allowDiskUse=False))
    assert failure.value.code == 292
    assert len(list(big.aggregate(many, allowDiskUse=True))) == 400
