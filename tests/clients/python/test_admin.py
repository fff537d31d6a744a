"""Databases and collections: listing, create, drop, rename, indexes and the stats commands."""

from __future__ import annotations

import numbers

import pytest
from pymongo import ASCENDING
from pymongo.errors import CollectionInvalid, OperationFailure


def test_list_database_names(client, db):
    db["a"].insert_one({"x": 1})
    assert db.name in client.list_database_names()


def test_list_databases_has_sizes(client, db):
    db["a"].insert_one({"x": 1})
    (entry,) = [d for d in client.list_databases() if d["name"] == db.name]
    assert isinstance(entry["sizeOnDisk"], numbers.Number)
    assert entry["empty"] is False


def test_drop_database(client, db):
    db["a"].insert_one({"x": 1})
    client.drop_database(db.name)
    assert db.name not in client.list_database_names()
    assert db.list_collection_names() == []
    assert list(db["a"].find()) == []


def test_list_collection_names(db):
    db["a"].insert_one({"x": 1})
    db["b"].insert_many([{"x": 1}, {"x": 2}])
    db.create_collection("c")
    assert sorted(db.list_collection_names()) == ["a", "b", "c"]


def test_list_collections_filter_and_type(db):
    db.create_collection("one")
    db.create_collection("two")
    (info,) = list(db.list_collections(filter={"name": "two"}))
    assert info["name"] == "two"
    assert info["type"] == "collection"


def test_create_collection_makes_an_empty_collection(db):
    coll = db.create_collection("fresh")
    assert "fresh" in db.list_collection_names()
    assert coll.count_documents({}) == 0
    coll.insert_one({"_id": 1})
    assert coll.find_one() == {"_id": 1}


def test_create_existing_collection(db):
    db.create_collection("dup")
    db["dup"].insert_one({"_id": 1})
    # pymongo checks with listCollections first and refuses.
    with pytest.raises(CollectionInvalid):
        db.create_collection("dup")
    # The server itself: since MongoDB 7.0 (wire version 21) a create with identical
    # options succeeds and changes nothing (before 7.0 it failed with NamespaceExists).
    assert db.command("create", "dup")["ok"] == 1
    assert db.list_collection_names() == ["dup"]
    assert db["dup"].find_one() == {"_id": 1}


def test_drop_collection(db):
    db["gone"].insert_many([{"x": 1}, {"x": 2}])
    db["kept"].insert_one({"x": 1})
    db["gone"].drop()
    assert db.list_collection_names() == ["kept"]
    assert list(db["gone"].find()) == []
    assert db["kept"].count_documents({}) == 1


def test_drop_missing_collection_is_not_an_error(db):
    db["never_created"].drop()
    assert "never_created" not in db.list_collection_names()


def test_rename_collection(db):
    db["old"].insert_many([{"_id": i} for i in range(3)])
    db["old"].rename("new")
    assert sorted(db.list_collection_names()) == ["new"]
    assert [d["_id"] for d in db["new"].find().sort("_id", ASCENDING)] == [0, 1, 2]
    assert list(db["old"].find()) == []


def test_rename_onto_existing_collection(db):
    db["src"].insert_one({"_id": "s"})
    db["dst"].insert_one({"_id": "d"})
    with pytest.raises(OperationFailure) as excinfo:
        db["src"].rename("dst")
    assert excinfo.value.code == 48  # NamespaceExists
    assert db["dst"].find_one() == {"_id": "d"}
    db["src"].rename("dst", dropTarget=True)
    assert db.list_collection_names() == ["dst"]
    assert db["dst"].find_one() == {"_id": "s"}


def test_rename_missing_collection(db):
    with pytest.raises(OperationFailure) as excinfo:
        db["absent"].rename("whatever")
    assert excinfo.value.code == 26  # NamespaceNotFound


def test_indexes(db):
    coll = db["idx"]
    coll.insert_one({"a": 1, "b": 2})
    name = coll.create_index([("a", ASCENDING), ("b", -1)])
    assert name == "a_1_b_-1"
    info = coll.index_information()
    assert info["_id_"]["key"] == [("_id", 1)]
    assert info[name]["key"] == [("a", 1), ("b", -1)]
    coll.drop_index(name)
    assert list(coll.index_information()) == ["_id_"]


def test_db_stats(db):
    db["a"].insert_many([{"x": i} for i in range(3)])
    db["b"].insert_many([{"x": i} for i in range(2)])
    stats = db.command("dbStats")
    assert stats["ok"] == 1
    assert stats["db"] == db.name
    assert stats["collections"] == 2
    assert stats["objects"] == 5
    for field in ("dataSize", "storageSize", "indexes"):
        assert isinstance(stats[field], numbers.Number), field


def test_coll_stats(db):
    db["items"].insert_many([{"x": i} for i in range(3)])
    stats = db.command("collStats", "items")
    assert stats["ok"] == 1
    assert stats["ns"] == f"{db.name}.items"
    assert stats["count"] == 3
    assert isinstance(stats["size"], numbers.Number)
    assert stats["nindexes"] >= 1
