"""Capped collections and tailable cursors as a pymongo user sees them.

Expected behaviour is MongoDB 7.0's, from its manual (Capped Collections, Tailable Cursors,
create) and its command definitions:

- `create` with `capped: true` needs `size` (72 InvalidOptions), `size`/`max` need
  `capped: true` (72), `size: 0` is 51024; `size` is rounded up to a multiple of 256 and
  listCollections shows `{capped: true, size, max}`; collStats says `capped: true`, `max`,
  `maxSize`;
- the oldest documents make room for new ones once `max` documents or `size` bytes are
  exceeded; `find` without a sort answers insertion order, `{$natural: -1}` the reverse; a
  document larger than `size` is BadValue; deletes and updates are allowed;
- writes to a capped collection inside a transaction (insert, update, delete, findAndModify)
  are 263;
- a tailable cursor needs a capped collection (2 BadValue), stays open at the end of the data
  and later returns what was inserted; with awaitData a getMore waits up to maxAwaitTimeMS for
  an insert (here another thread's); a cursor whose position was overwritten answers 136
  CappedPositionLost.
"""

from __future__ import annotations

import threading
import time

import pytest
from bson import Int64
from pymongo import CursorType
from pymongo.errors import OperationFailure, WriteError


@pytest.fixture(autouse=True)
def _empty_database(client, db):
    """A database left by an earlier run on the same PostgreSQL cluster starts empty."""
    client.drop_database(db.name)


def test_create_options_are_listed_as_mongodb_records_them(db):
    db.create_collection("log", capped=True, size=1000, max=5)
    assert db["log"].options() == {"capped": True, "size": 1024, "max": 5}
    info = next(db.list_collections(filter={"name": "log"}))
    assert info["options"] == {"capped": True, "size": 1024, "max": 5}
    stats = db.command("collStats", "log")
    assert stats["capped"] is True
    assert stats["max"] == 5
    assert stats["maxSize"] == 1024
    # Creating it again with the same options is fine; with other options it is not.
    db.create_collection("log", capped=True, size=1000, max=5, check_exists=False)
    with pytest.raises(OperationFailure) as refused:
        db.create_collection("log", capped=True, size=4096, check_exists=False)
    assert refused.value.code == 48
    db.create_collection("plain")
    assert db.command("collStats", "plain")["capped"] is False
    db.create_collection("unlimited", capped=True, size=4096)
    assert db.command("collStats", "unlimited")["max"] == 0
    db.create_collection("zero", capped=True, size=4096, max=0)
    assert db["zero"].options() == {"capped": True, "size": 4096, "max": 2**31 - 1}
    assert db.command("collStats", "zero")["max"] == 2**31 - 1


@pytest.mark.parametrize(
    "options, code",
    [
        ({"capped": True}, 72),
        ({"capped": True, "max": 10}, 72),
        ({"size": 4096}, 72),
        ({"capped": False, "max": 3}, 72),
        ({"capped": True, "size": 0}, 51024),
        ({"capped": True, "size": "big"}, 14),
    ],
)
def test_create_refusals(db, options, code):
    with pytest.raises(OperationFailure) as refused:
        db.command({"create": "bad", **options})
    assert refused.value.code == code
    assert "bad" not in db.list_collection_names()


def test_max_keeps_the_newest_documents_in_insertion_order(db):
    log = db.create_collection("log", capped=True, size=100_000, max=3)
    for i in range(5):
        log.insert_one({"_id": 10 - i, "i": i})
    assert [d["i"] for d in log.find()] == [2, 3, 4]
    log.insert_many([{"_id": 100 + i, "i": 10 + i} for i in range(5)])
    assert [d["i"] for d in log.find()] == [12, 13, 14]
    assert [d["i"] for d in log.find().sort("$natural", -1)] == [14, 13, 12]
    assert log.count_documents({}) == 3


def test_size_removes_the_oldest_until_the_rest_fit(db):
    log = db.create_collection("log", capped=True, size=1000)
    padding = "x" * 80
    for i in range(40):
        log.insert_one({"i": i, "pad": padding})
    kept = [d["i"] for d in log.find()]
    total = db.command("collStats", "log")["size"]
    assert total <= 1024
    assert 0 < len(kept) < 40
    # The newest ones, contiguous, in insertion order.
    assert kept == list(range(40 - len(kept), 40))


def test_a_document_larger_than_the_collection_is_refused(db):
    log = db.create_collection("log", capped=True, size=256)
    log.insert_one({"small": 1})
    with pytest.raises(WriteError) as refused:
        log.insert_one({"big": "y" * 300})
    assert refused.value.code == 2
    assert [d.get("small") for d in log.find()] == [1]


def test_updates_and_deletes_are_allowed(db):
    log = db.create_collection("log", capped=True, size=4096)
    log.insert_many([{"_id": i, "v": i} for i in range(4)])
    assert log.delete_one({"_id": 1}).deleted_count == 1
    assert log.update_one({"_id": 2}, {"$set": {"v": 20}}).modified_count == 1
    assert [(d["_id"], d["v"]) for d in log.find()] == [(0, 0), (2, 20), (3, 3)]


def test_upserts_and_merge_make_room_too(db):
    log = db.create_collection("log", capped=True, size=100_000, max=2)
    log.insert_many([{"_id": 1}, {"_id": 2}])
    log.update_one({"_id": 3}, {"$set": {"v": 3}}, upsert=True)
    assert [d["_id"] for d in log.find()] == [2, 3]
    db["src"].insert_many([{"_id": 4}, {"_id": 5}])
    list(db["src"].aggregate([{"$merge": {"into": "log"}}]))
    assert [d["_id"] for d in log.find()] == [4, 5]
    with pytest.raises(OperationFailure) as refused:
        list(db["src"].aggregate([{"$out": "log"}]))
    assert refused.value.code == 17152


def test_convert_to_capped_keeps_the_newest_documents_that_fit(db):
    plain = db["plain"]
    plain.insert_many([{"_id": i, "pad": "z" * 200} for i in range(10)])
    plain.create_index("pad")
    old_uuid = next(db.list_collections(filter={"name": "plain"}))["info"]["uuid"]
    db.command({"convertToCapped": "plain", "size": 1000})
    info = next(db.list_collections(filter={"name": "plain"}))
    assert info["options"] == {"capped": True, "size": 1024}
    assert info["info"]["uuid"] != old_uuid
    kept = [d["_id"] for d in plain.find()]
    assert kept == list(range(10 - len(kept), 10)) and 0 < len(kept) < 10
    # Only the _id index is copied, as in MongoDB.
    assert [i["name"] for i in plain.list_indexes()] == ["_id_"]
    plain.insert_one({"_id": 10, "pad": "z" * 200})
    assert [d["_id"] for d in plain.find()][-1] == 10
    with pytest.raises(OperationFailure) as missing:
        db.command({"convertToCapped": "nowhere", "size": 4096})
    assert missing.value.code == 26


def test_clone_collection_as_capped(db):
    db["src"].insert_many([{"_id": i} for i in range(5)])
    db.command({"cloneCollectionAsCapped": "src", "toCollection": "dst", "size": 4096})
    assert db["dst"].options() == {"capped": True, "size": 4096}
    assert [d["_id"] for d in db["dst"].find()] == [0, 1, 2, 3, 4]
    assert db["src"].options() == {}
    with pytest.raises(OperationFailure) as exists:
        db.command({"cloneCollectionAsCapped": "src", "toCollection": "dst", "size": 4096})
    assert exists.value.code == 48


def test_writes_in_a_transaction_are_refused(client, db):
    log = db.create_collection("log", capped=True, size=4096)
    log.insert_one({"_id": 1, "a": 0})
    writes = [
        lambda s: log.insert_one({"a": 1}, session=s),
        lambda s: log.update_one({"_id": 1}, {"$set": {"a": 2}}, session=s),
        lambda s: log.delete_one({"_id": 1}, session=s),
        lambda s: log.find_one_and_update({"_id": 1}, {"$set": {"a": 3}}, session=s),
    ]
    for write in writes:
        with client.start_session() as session:
            with pytest.raises(OperationFailure) as refused:
                with session.start_transaction():
                    write(session)
        assert refused.value.code == 263
    assert list(log.find()) == [{"_id": 1, "a": 0}]
    # Outside a transaction (a retryable write has a transaction of its own) they work.
    with client.start_session() as session:
        log.insert_one({"_id": 2}, session=session)
    assert log.count_documents({}) == 2


def test_tailable_needs_a_capped_collection(db):
    db["plain"].insert_one({"a": 1})
    with pytest.raises(OperationFailure) as refused:
        next(db["plain"].find(cursor_type=CursorType.TAILABLE))
    assert refused.value.code == 2
    with pytest.raises(OperationFailure) as refused:
        db.command({"find": "plain", "awaitData": True})
    assert refused.value.code == 9


def test_tailable_cursor_returns_documents_inserted_after_it_reached_the_end(db):
    log = db.create_collection("log", capped=True, size=100_000)
    log.insert_many([{"i": i} for i in range(3)])
    cursor = log.find(cursor_type=CursorType.TAILABLE)
    assert [d["i"] for d in cursor] == [0, 1, 2]
    assert cursor.alive
    log.insert_many([{"i": 3}, {"i": 4}])
    assert [d["i"] for d in cursor] == [3, 4]
    assert cursor.alive
    cursor.close()


def test_tailable_cursor_on_an_empty_collection_is_dead(db):
    log = db.create_collection("log", capped=True, size=4096)
    cursor = log.find(cursor_type=CursorType.TAILABLE)
    assert list(cursor) == []
    assert not cursor.alive


def test_await_data_waits_for_another_threads_insert(db):
    log = db.create_collection("log", capped=True, size=100_000)
    log.insert_one({"i": 0})
    cursor = log.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(20_000)
    assert cursor.next()["i"] == 0

    def insert_later():
        time.sleep(0.3)
        log.insert_one({"i": 1})

    writer = threading.Thread(target=insert_later)
    writer.start()
    try:
        # The getMore waits (up to 20 s) and answers as soon as the insert commits.
        assert cursor.next()["i"] == 1
    finally:
        writer.join(timeout=30)
    assert cursor.alive
    cursor.close()


def test_await_data_answers_an_empty_batch_after_max_await(db):
    log = db.create_collection("log", capped=True, size=4096)
    log.insert_one({"i": 0})
    reply = db.command({"find": "log", "tailable": True, "awaitData": True})
    cursor_id = reply["cursor"]["id"]
    assert cursor_id != 0
    more = db.command({"getMore": Int64(cursor_id), "collection": "log", "maxTimeMS": 50})
    assert more["cursor"]["nextBatch"] == []
    assert more["cursor"]["id"] == cursor_id
    # maxTimeMS on the getMore of a tailable cursor without awaitData stays refused.
    plain = db.command({"find": "log", "tailable": True})["cursor"]["id"]
    with pytest.raises(OperationFailure) as refused:
        db.command({"getMore": Int64(plain), "collection": "log", "maxTimeMS": 50})
    assert refused.value.code == 2
    db.command({"killCursors": "log", "cursors": [Int64(cursor_id), Int64(plain)]})


def test_a_deleted_position_is_lost_even_when_a_newer_document_follows(db):
    log = db.create_collection("log", capped=True, size=4096)
    log.insert_many([{"_id": 1}, {"_id": 2}])
    reply = db.command({"find": "log", "tailable": True})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1, 2]
    log.delete_one({"_id": 2})
    log.insert_one({"_id": 3})
    with pytest.raises(OperationFailure) as lost:
        db.command({"getMore": Int64(reply["cursor"]["id"]), "collection": "log"})
    assert lost.value.code == 136


def test_a_tailing_reader_sees_concurrent_writers_documents_once_each(server, db):
    """Inserts from several connections at once: insertion order is commit order, so a
    tailable cursor that resumes after the last document it saw misses none."""
    log = db.create_collection("log", capped=True, size=10_000_000)
    log.insert_one({"w": -1, "n": -1})
    cursor = log.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(500)
    assert cursor.next()["w"] == -1
    writers, per_writer = 4, 25

    def write(w):
        with server.client() as own:
            target = own[db.name]["log"]
            for n in range(per_writer):
                target.insert_one({"w": w, "n": n})

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    seen = []
    deadline = time.monotonic() + 60
    while len(seen) < writers * per_writer and time.monotonic() < deadline:
        try:
            document = cursor.next()
        except StopIteration:
            assert cursor.alive
            continue
        seen.append((document["w"], document["n"]))
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(seen) == [(w, n) for w in range(writers) for n in range(per_writer)]
    # Each writer's documents in the order it wrote them, and in natural order too.
    for w in range(writers):
        assert [n for (ww, n) in seen if ww == w] == list(range(per_writer))
    natural = [(d["w"], d["n"]) for d in log.find({"w": {"$gte": 0}})]
    assert natural == seen
    cursor.close()


def test_overwritten_position_is_capped_position_lost(db):
    log = db.create_collection("log", capped=True, size=100_000, max=2)
    log.insert_many([{"i": 0}, {"i": 1}])
    reply = db.command({"find": "log", "tailable": True})
    assert [d["i"] for d in reply["cursor"]["firstBatch"]] == [0, 1]
    log.insert_many([{"i": 2}, {"i": 3}, {"i": 4}])
    with pytest.raises(OperationFailure) as lost:
        db.command({"getMore": Int64(reply["cursor"]["id"]), "collection": "log"})
    assert lost.value.code == 136
    # pymongo takes 136 on a tailable cursor as the cursor's end: it is no longer alive.
    cursor = log.find(cursor_type=CursorType.TAILABLE)
    assert [d["i"] for d in cursor] == [3, 4]
    log.insert_many([{"i": 5}, {"i": 6}, {"i": 7}])
    assert list(cursor) == []
    assert not cursor.alive
