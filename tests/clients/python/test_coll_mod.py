"""`collMod` through pymongo, with expectations from MongoDB's manual ("collMod", "Hidden
Indexes", "TTL Indexes": change expireAfterSeconds): an index is hidden from the planner and
from `hint` but still maintained and still unique; `expireAfterSeconds` of a TTL index
changes what the TTL monitor deletes; a view is redefined with `viewOn` and `pipeline`;
an index is converted to unique MongoDB's way (`prepareUnique: true`, which refuses new
duplicate keys, then `unique: true`, with `dryRun` to check first); options that do not
apply answer MongoDB's errors, and what docgate does not do yet (change stream images,
capped sizes, `prepareUnique` over keys that already repeat) is refused.
"""

from __future__ import annotations

import datetime
import time

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

from conftest import DocgateServer


def failure(action) -> OperationFailure:
    with pytest.raises(OperationFailure) as raised:
        action()
    return raised.value


def winning_stages(plan: dict) -> list:
    stages = []
    node = plan["queryPlanner"]["winningPlan"]
    while node:
        stages.append(node.get("stage"))
        node = node.get("inputStage")
    return stages


@pytest.fixture
def people(db):
    coll = db["people"]
    coll.insert_many([{"_id": i, "age": i % 50, "email": f"u{i}@x"} for i in range(200)])
    coll.create_index("age", name="age_1")
    coll.create_index("email", name="email_1", unique=True)
    return coll


def test_hidden_index_is_not_planned_nor_hinted(db, people):
    assert winning_stages(people.find({"age": 7}).explain()).count("IXSCAN") == 1
    reply = db.command("collMod", "people", index={"name": "age_1", "hidden": True})
    assert (reply["hidden_old"], reply["hidden_new"]) == (False, True)
    specs = {spec["name"]: spec for spec in people.list_indexes()}
    assert specs["age_1"]["hidden"] is True
    assert "IXSCAN" not in winning_stages(people.find({"age": 7}).explain())
    assert failure(lambda: list(people.find({"age": 7}).hint("age_1"))).code == 2
    assert failure(lambda: list(people.find({"age": 7}).hint([("age", 1)]))).code == 2
    # Still maintained while hidden: the answers are the same, and unhidden it serves again.
    people.insert_one({"_id": 1000, "age": 7})
    assert people.count_documents({"age": 7}) == 5
    reply = db.command("collMod", "people", index={"keyPattern": {"age": 1}, "hidden": False})
    assert (reply["hidden_old"], reply["hidden_new"]) == (True, False)
    assert "hidden" not in {spec["name"]: spec for spec in people.list_indexes()}["age_1"]
    assert sorted(d["_id"] for d in people.find({"age": 7}).hint("age_1")) == [7, 57, 107, 157, 1000]


def test_a_hidden_unique_index_still_refuses_duplicates(db, people):
    db.command("collMod", "people", index={"name": "email_1", "hidden": True})
    with pytest.raises(DuplicateKeyError):
        people.insert_one({"email": "u3@x"})
    # Hiding what is hidden changes nothing and says nothing.
    reply = db.command("collMod", "people", index={"name": "email_1", "hidden": True})
    assert "hidden_old" not in reply and "hidden_new" not in reply


def test_expire_after_seconds_is_changed(db, people):
    people.create_index("at", name="at_1", expireAfterSeconds=3600)
    reply = db.command("collMod", "people", index={"name": "at_1", "expireAfterSeconds": 60})
    assert (reply["expireAfterSeconds_old"], reply["expireAfterSeconds_new"]) == (3600, 60)
    specs = {spec["name"]: spec for spec in people.list_indexes()}
    assert specs["at_1"]["expireAfterSeconds"] == 60
    # A single-field index that was not TTL becomes one.
    reply = db.command("collMod", "people", index={"name": "age_1", "expireAfterSeconds": 10})
    assert reply["expireAfterSeconds_new"] == 10 and "expireAfterSeconds_old" not in reply


def test_index_errors(db, people):
    db["people"].create_index([("age", 1), ("email", 1)], name="age_email")
    cases = [
        ({"name": "nope", "hidden": True}, 27),
        ({"keyPattern": {"nope": 1}, "hidden": True}, 27),
        ({"name": "age_1", "keyPattern": {"age": 1}, "hidden": True}, 72),
        ({"hidden": True}, 72),
        ({"name": "age_1"}, 72),
        ({"name": "_id_", "hidden": True}, 2),
        ({"keyPattern": {"_id": 1}, "expireAfterSeconds": 5}, 72),
        ({"name": "age_email", "expireAfterSeconds": 5}, 72),
        ({"name": "age_1", "expireAfterSeconds": -1}, 72),
        ({"name": "age_1", "hidden": "yes"}, 14),
        ({"name": "age_1", "hidden": True, "sparse": True}, 40415),
    ]
    for index, code in cases:
        assert failure(lambda: db.command("collMod", "people", index=index)).code == code, index
    assert "hidden" not in {spec["name"]: spec for spec in people.list_indexes()}["age_1"]


def test_options_docgate_does_not_honour_are_refused(db, people):
    cases = [
        ({"index": {"name": "age_1", "unique": False}}, 2),
        ({"index": {"name": "age_1", "forceNonUnique": True}}, 115),
        ({"changeStreamPreAndPostImages": {"enabled": True}}, 115),
        ({"cappedSize": 4096}, 72),
        ({"cappedMax": 10}, 72),
        ({"timeseries": {"granularity": "hours"}}, 72),
        ({"expireAfterSeconds": 10}, 72),
        ({"noSuchOption": 1}, 40415),
    ]
    for options, code in cases:
        assert failure(lambda: db.command({"collMod": "people", **options})).code == code, options


def test_converting_an_index_to_unique(db, people):
    people.update_many({}, [{"$set": {"code": {"$concat": ["c", {"$toString": "$_id"}]}}}])
    people.create_index("code", name="code_1")
    # One step is refused: prepareUnique first.
    assert failure(lambda: db.command("collMod", "people", index={"name": "code_1", "unique": True})).code == 72
    assert failure(lambda: db.command("collMod", "people", dryRun=True, index={"name": "code_1", "unique": True})).code == 72
    # prepareUnique is a change of its own.
    combined = {"name": "code_1", "prepareUnique": True, "hidden": True}
    assert failure(lambda: db.command("collMod", "people", index=combined)).code == 72

    reply = db.command("collMod", "people", index={"keyPattern": {"code": 1}, "prepareUnique": True})
    assert (reply["prepareUnique_old"], reply["prepareUnique_new"]) == (False, True)
    spec = {s["name"]: s for s in people.list_indexes()}["code_1"]
    assert spec["prepareUnique"] is True and "unique" not in spec
    # New duplicates are refused, by insert and by update; other writes go on.
    with pytest.raises(DuplicateKeyError) as raised:
        people.insert_one({"_id": 500, "code": "c3", "email": "e500"})
    assert "code_1" in str(raised.value)
    with pytest.raises(DuplicateKeyError):
        people.update_one({"_id": 4}, {"$set": {"code": "c5"}})
    people.insert_one({"_id": 501, "code": "c501", "email": "e501"})
    people.update_one({"_id": 4}, {"$set": {"code": "c4b", "age": 1}})
    assert people.count_documents({"code": {"$in": ["c3", "c5"]}}) == 2
    # Queries still use it.
    assert "IXSCAN" in winning_stages(people.find({"code": "c7"}).explain())

    assert db.command("collMod", "people", dryRun=True, index={"name": "code_1", "unique": True})["ok"] == 1
    dry_combined = {"name": "code_1", "unique": True, "hidden": True}
    assert failure(lambda: db.command("collMod", "people", dryRun=True, index=dry_combined)).code == 72
    reply = db.command("collMod", "people", index={"name": "code_1", "unique": True})
    assert reply["unique_new"] is True
    spec = {s["name"]: s for s in people.list_indexes()}["code_1"]
    assert spec["unique"] is True and "prepareUnique" not in spec
    with pytest.raises(DuplicateKeyError):
        people.insert_one({"code": "c9", "email": "e9"})
    # Unique again is nothing; making it non-unique is refused.
    assert "unique_new" not in db.command("collMod", "people", index={"name": "code_1", "unique": True})
    assert failure(lambda: db.command("collMod", "people", index={"name": "code_1", "unique": False})).code == 2


def test_prepare_unique_over_existing_duplicates_is_refused_and_can_be_cleared(db, people):
    # `age` repeats: MongoDB would keep the duplicates; docgate lists them to be resolved first.
    refused = failure(lambda: db.command("collMod", "people", index={"name": "age_1", "prepareUnique": True}))
    assert refused.code == 115
    assert "[0, 50, 100, 150]" in refused.details["errmsg"]
    assert "prepareUnique" not in {s["name"]: s for s in people.list_indexes()}["age_1"]
    people.insert_one({"_id": 900, "age": 0, "email": "e900"})

    people.create_index("solo", name="solo_1", sparse=True)
    people.insert_one({"_id": 901, "solo": 1, "email": "e901"})
    db.command("collMod", "people", index={"name": "solo_1", "prepareUnique": True})
    with pytest.raises(DuplicateKeyError) as raised:
        people.insert_one({"_id": 902, "solo": 1, "email": "e902"})
    assert "solo_1" in str(raised.value)
    reply = db.command("collMod", "people", index={"name": "solo_1", "prepareUnique": False})
    assert (reply["prepareUnique_old"], reply["prepareUnique_new"]) == (True, False)
    people.insert_one({"_id": 902, "solo": 1, "email": "e902"})
    assert people.count_documents({"solo": 1}) == 2
    # createIndexes does not take the mode (collMod sets it).
    assert failure(lambda: people.create_index("x", prepareUnique=True)).code == 115


def test_empty_coll_mod_and_missing_namespace(db, people):
    assert db.command("collMod", "people")["ok"] == 1
    assert failure(lambda: db.command("collMod", "absent")).code == 26
    uuid = next(db.list_collections(filter={"name": "people"}))["info"]["uuid"]
    assert db.command("collMod", "people", collectionUUID=uuid)["ok"] == 1
    other = next(db.list_collections(filter={"name": "people"}))["info"]["uuid"]
    assert other == uuid
    db.create_collection("other")
    other_uuid = next(db.list_collections(filter={"name": "other"}))["info"]["uuid"]
    assert failure(lambda: db.command("collMod", "people", collectionUUID=other_uuid)).code == 361


def test_redefining_a_view(db, people):
    db.create_collection("young", viewOn="people", pipeline=[{"$match": {"age": {"$lt": 2}}}])
    assert db["young"].count_documents({}) == 8
    assert db.command("collMod", "young", pipeline=[{"$match": {"age": 0}}])["ok"] == 1
    assert sorted(d["_id"] for d in db["young"].find()) == [0, 50, 100, 150]
    db["people2"].insert_one({"_id": "x", "age": 0})
    db.command("collMod", "young", viewOn="people2", pipeline=[])
    assert list(db["young"].find()) == [{"_id": "x", "age": 0}]
    info = next(db.list_collections(filter={"name": "young"}))
    assert info["options"] == {"viewOn": "people2", "pipeline": []}
    # What applies to views only, or to collections only.
    assert failure(lambda: db.command("collMod", "people", viewOn="people2")).code == 72
    assert failure(lambda: db.command("collMod", "people", pipeline=[])).code == 72
    assert failure(lambda: db.command("collMod", "young", index={"name": "age_1", "hidden": True})).code == 72
    assert failure(lambda: db.command("collMod", "young", validator={"a": 1})).code == 72
    assert failure(lambda: db.command("collMod", "young", pipeline=[{"$out": "x"}])).code == 167
    assert failure(lambda: db.command("collMod", "young", viewOn="young")).code == 160
    assert list(db["young"].find()) == [{"_id": "x", "age": 0}]


@pytest.fixture
def ttl_server(tmp_path_factory):
    srv = DocgateServer(
        tmp_path_factory.mktemp("ttl"), extra_args=["--ttl-monitor-interval", "200ms"], fresh_storage=True
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_the_ttl_monitor_follows_a_changed_expire_after_seconds(ttl_server):
    with ttl_server.client() as client:
        coll = client["ttl_db"]["events"]
        ten_minutes_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=10)
        coll.insert_many([{"_id": 1, "at": ten_minutes_ago}, {"_id": 2, "at": datetime.datetime.now(datetime.timezone.utc)}])
        coll.create_index("at", name="at_1", expireAfterSeconds=3600)
        # Several passes of the monitor: an hour has not passed.
        time.sleep(1.0)
        assert coll.count_documents({}) == 2
        client["ttl_db"].command("collMod", "events", index={"name": "at_1", "expireAfterSeconds": 60})
        deadline = time.monotonic() + 30
        while coll.count_documents({}) == 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [d["_id"] for d in coll.find()] == [2]
