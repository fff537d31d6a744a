"""Collections clustered by `_id` (`create` with `clusteredIndex`), as the driver
specifications' collection-management test `clustered-indexes.json` and MongoDB's manual
("Clustered Collections") describe them: every docgate collection is stored in `_id` order,
so `clusteredIndex: {key: {_id: 1}, unique: true}` is accepted and shown back —
listCollections `options.clusteredIndex` as `{v: 2, key, name, unique}` (no `idIndex`),
listIndexes the `_id` index with its name and `clustered: true`. Any other key, `unique:
false`, a capped clustered collection and the clustered TTL (`expireAfterSeconds`) are
refused with an error, never accepted and ignored.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


def test_create_and_list_a_clustered_collection(db):
    db.create_collection("test", clusteredIndex={"key": {"_id": 1}, "unique": True, "name": "test index"})
    info = next(db.list_collections(filter={"name": {"$eq": "test"}}))
    assert info["options"] == {
        "clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "test index", "unique": True}
    }
    assert "idIndex" not in info
    assert list(db["test"].list_indexes()) == [
        {"v": 2, "key": {"_id": 1}, "name": "test index", "unique": True, "clustered": True}
    ]
    db["test"].insert_many([{"_id": 3}, {"_id": 1}, {"_id": 2}])
    # Stored in _id order: the natural order is _id order, forwards and backwards.
    assert [d["_id"] for d in db["test"].find()] == [1, 2, 3]
    assert [d["_id"] for d in db["test"].find().sort("$natural", -1)] == [3, 2, 1]


def test_the_default_name_is_the_id_index_name(db):
    db.create_collection("named", clusteredIndex={"key": {"_id": 1}, "unique": True})
    assert db["named"].options()["clusteredIndex"]["name"] == "_id_"


@pytest.mark.parametrize(
    "spec",
    [
        {"key": {"a": 1}, "unique": True},
        {"key": {"_id": -1}, "unique": True},
        {"key": {"_id": 1}, "unique": False},
        {"key": {"_id": 1}},
        {"unique": True},
        {"key": {"_id": 1}, "unique": True, "sparse": True},
    ],
)
def test_other_clusterings_are_refused(db, spec):
    with pytest.raises(OperationFailure):
        db.create_collection("refused", clusteredIndex=spec)
    assert "refused" not in db.list_collection_names()


def test_clustered_ttl_and_capped_are_refused(db):
    with pytest.raises(OperationFailure) as ttl:
        db.create_collection(
            "ttl", clusteredIndex={"key": {"_id": 1}, "unique": True}, expireAfterSeconds=60
        )
    assert ttl.value.code == 115
    with pytest.raises(OperationFailure) as capped:
        db.create_collection(
            "cap", clusteredIndex={"key": {"_id": 1}, "unique": True}, capped=True, size=4096
        )
    assert capped.value.code == 72
    assert db.list_collection_names() == []
