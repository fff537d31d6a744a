"""Multi-document transactions, logical sessions and retryable writes as a pymongo user sees them.

Expected behaviour is MongoDB's, as its manual and the driver specifications (transactions,
retryable-writes, the failCommand fail point) describe it:

- a transaction's writes are visible inside it (read your own writes) and to nobody else until
  it commits; an abort (explicit, or an exception in `with s.start_transaction()`) leaves
  nothing; one transaction may span collections and databases and create a collection;
- two transactions writing one document: the second writer fails at once with 112
  WriteConflict labelled TransientTransactionError, and `with_transaction` retries it to
  success once the first one has committed;
- 251 NoSuchTransaction for a transaction the server does not know (or has aborted, e.g.
  after `--transaction-lifetime-limit-seconds`), commitTransaction retried is idempotent,
  abortTransaction after commit is 256 TransactionCommitted, the `count` command inside a
  transaction is 263 OperationNotSupportedInTransaction (count_documents, an aggregate, works);
- serverStatus().transactions counts open, started, committed and aborted transactions;
- with `--enable-test-commands`, configureFailPoint failCommand: a closed connection or a
  RetryableWriteError makes pymongo retry an insert once, and the document is there once.

The servers here are docgate processes of this module's own (DocgateServer with
fresh_storage=True): one for the transaction tests, one started with --enable-test-commands for
the fail point tests, and the lifetime test starts one with a one-second transaction lifetime. Every driver call has a socket timeout and every second
thread a future timeout, so a server that blocks a writer fails the test instead of hanging it.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from bson import Int64
from pymongo import MongoClient
from pymongo.errors import AutoReconnect, NotPrimaryError, OperationFailure
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from conftest import DocgateServer

# Longest a second thread may take for one step before the test calls it a hang.
THREAD_TIMEOUT_S = 20
# The second writer of a write conflict must be told at once, not after a lock wait.
FAIL_FAST_S = 5.0


# ------------------------------------------------------------------ servers and clients


def _start(tmp_path_factory, *extra_args) -> DocgateServer:
    srv = DocgateServer(tmp_path_factory.mktemp("txn"), extra_args=extra_args, fresh_storage=True)
    srv.start()
    return srv


def _stop(srv: DocgateServer) -> None:
    died = srv.proc is not None and srv.proc.poll() is not None
    srv.stop()
    if died:
        raise RuntimeError(f"docgate exited with {srv.proc.returncode} during the test:\n{srv.log_tail()}")


@pytest.fixture(scope="module")
def txn_server(tmp_path_factory):
    """A server of this module's own for the transaction tests."""
    srv = _start(tmp_path_factory)
    try:
        yield srv
    finally:
        _stop(srv)


@pytest.fixture(scope="module")
def fp_server(tmp_path_factory):
    """A server with configureFailPoint enabled (--enable-test-commands), for the fail point tests."""
    srv = _start(tmp_path_factory, "--enable-test-commands")
    try:
        yield srv
    finally:
        _stop(srv)


@pytest.fixture
def make_server(tmp_path_factory):
    """Starts servers with extra flags for one test; stops them after it."""
    servers: list[DocgateServer] = []

    def make(*extra_args) -> DocgateServer:
        srv = _start(tmp_path_factory, *extra_args)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        _stop(srv)


def _client(srv: DocgateServer, **kwargs) -> MongoClient:
    kwargs.setdefault("socketTimeoutMS", 15_000)
    return srv.client(**kwargs)


@pytest.fixture(scope="module")
def client(txn_server):
    c = _client(txn_server)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def other(txn_server):
    """A second client (its own connections): the rest of the world, outside the transaction."""
    c = _client(txn_server)
    try:
        yield c
    finally:
        c.close()


def _db_name(request, suffix="") -> str:
    node = request.node.name + suffix
    digest = hashlib.sha1(node.encode()).hexdigest()[:8]
    return "tx_" + re.sub(r"[^A-Za-z0-9_]", "_", node)[:40] + "_" + digest


@pytest.fixture
def db(client, request):
    return client[_db_name(request)]


@pytest.fixture
def coll(db):
    return db["items"]


def _other_coll(other, coll):
    return other[coll.database.name][coll.name]


def transactions_status(client: MongoClient) -> dict:
    return client.admin.command("serverStatus")["transactions"]


def assert_code(err: OperationFailure, code: int, code_name: str) -> None:
    assert err.code == code, err.details
    assert err.details.get("codeName") == code_name, err.details
    assert err.details.get("errmsg"), err.details


# ------------------------------------------------------------------ commit and abort


def test_commit_with_the_context_manager_makes_all_writes_visible(coll, other):
    coll.insert_one({"_id": 0, "n": 0})
    with coll.database.client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": 1, "n": 1}, session=s)
            coll.insert_many([{"_id": 2, "n": 2}, {"_id": 3, "n": 3}], session=s)
            coll.update_one({"_id": 0}, {"$set": {"n": 10}}, session=s)
            coll.delete_one({"_id": 3}, session=s)
        assert not s.in_transaction
    seen = list(_other_coll(other, coll).find({}, sort=[("_id", 1)]))
    assert seen == [{"_id": 0, "n": 10}, {"_id": 1, "n": 1}, {"_id": 2, "n": 2}]


def test_commit_with_snapshot_read_concern_and_majority_write_concern(coll, other):
    with coll.database.client.start_session() as s:
        with s.start_transaction(read_concern=ReadConcern("snapshot"), write_concern=WriteConcern("majority")):
            coll.insert_one({"_id": 1}, session=s)
            assert coll.find_one({"_id": 1}, session=s) == {"_id": 1}
    assert _other_coll(other, coll).find_one({"_id": 1}) == {"_id": 1}


def test_manual_start_and_abort_leaves_nothing(coll, other):
    coll.insert_one({"_id": 0, "n": 0})
    with coll.database.client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        coll.update_one({"_id": 0}, {"$inc": {"n": 5}}, session=s)
        coll.delete_one({"_id": 0, "n": 5}, session=s)
        assert coll.count_documents({}, session=s) == 1
        s.abort_transaction()
        assert not s.in_transaction
    assert list(_other_coll(other, coll).find({})) == [{"_id": 0, "n": 0}]
    assert list(coll.find({})) == [{"_id": 0, "n": 0}]


def test_manual_start_and_commit(coll, other):
    with coll.database.client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        s.commit_transaction()
    assert _other_coll(other, coll).find_one({"_id": 1}) == {"_id": 1}


def test_an_exception_inside_the_context_manager_aborts(coll, other):
    class Boom(Exception):
        pass

    with coll.database.client.start_session() as s:
        with pytest.raises(Boom):
            with s.start_transaction():
                coll.insert_one({"_id": 1}, session=s)
                raise Boom()
        assert not s.in_transaction
    assert _other_coll(other, coll).find_one({"_id": 1}) is None


def test_ending_a_session_with_an_open_transaction_aborts_it(coll, other):
    s = coll.database.client.start_session()
    s.start_transaction()
    coll.insert_one({"_id": 1}, session=s)
    s.end_session()
    assert _other_coll(other, coll).find_one({"_id": 1}) is None
    coll.insert_one({"_id": 1})  # no lock left behind on the _id
    assert coll.count_documents({}) == 1


def test_one_session_runs_transactions_one_after_another(coll, other):
    with coll.database.client.start_session() as s:
        for i in range(5):
            with s.start_transaction():
                coll.insert_one({"_id": i}, session=s)
            s.start_transaction()
            coll.insert_one({"_id": 100 + i}, session=s)
            s.abort_transaction()
    assert sorted(d["_id"] for d in _other_coll(other, coll).find({})) == [0, 1, 2, 3, 4]


# ------------------------------------------------------------------ visibility


def test_read_your_own_writes_and_nothing_visible_outside_before_commit(coll, other):
    coll.insert_one({"_id": 0, "v": "old"})
    outside = _other_coll(other, coll)
    with coll.database.client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": 1, "v": "new"}, session=s)
            coll.update_one({"_id": 0}, {"$set": {"v": "changed"}}, session=s)
            # Inside: every read sees the transaction's own writes.
            assert coll.find_one({"_id": 1}, session=s) == {"_id": 1, "v": "new"}
            assert coll.find_one({"_id": 0}, session=s) == {"_id": 0, "v": "changed"}
            assert coll.count_documents({}, session=s) == 2
            agg = list(coll.aggregate([{"$match": {"v": {"$in": ["new", "changed"]}}}, {"$count": "n"}], session=s))
            assert agg == [{"n": 2}]
            # Outside: the committed state only, before commit.
            assert outside.find_one({"_id": 1}) is None
            assert outside.find_one({"_id": 0}) == {"_id": 0, "v": "old"}
            assert outside.count_documents({}) == 1
            # The same client, outside the session, sees no more than the world does.
            assert coll.find_one({"_id": 1}) is None
        assert outside.find_one({"_id": 1}) == {"_id": 1, "v": "new"}
        assert outside.find_one({"_id": 0}) == {"_id": 0, "v": "changed"}


def test_a_snapshot_transaction_does_not_see_later_commits_of_others(coll, other):
    coll.insert_many([{"_id": 1, "n": 0}, {"_id": 2, "n": 0}])
    outside = _other_coll(other, coll)
    with coll.database.client.start_session() as s:
        with s.start_transaction(read_concern=ReadConcern("snapshot")):
            assert coll.find_one({"_id": 1}, session=s) == {"_id": 1, "n": 0}
            outside.update_one({"_id": 2}, {"$set": {"n": 5}})
            outside.insert_one({"_id": 3, "n": 0})
            # Its snapshot was taken at its first read: the later commits are not in it.
            assert coll.find_one({"_id": 2}, session=s) == {"_id": 2, "n": 0}
            assert coll.count_documents({}, session=s) == 2
    assert outside.find_one({"_id": 2}) == {"_id": 2, "n": 5}


def test_one_transaction_across_two_collections_and_two_databases(client, other, request):
    db1, db2 = client[_db_name(request, "a")], client[_db_name(request, "b")]
    a, b, c = db1["accounts"], db1["ledger"], db2["audit"]
    a.insert_many([{"_id": "alice", "bal": 100}, {"_id": "bob", "bal": 0}])
    b.insert_one({"_id": "seed"})
    c.insert_one({"_id": "seed"})
    with client.start_session() as s:
        with s.start_transaction():
            a.update_one({"_id": "alice"}, {"$inc": {"bal": -30}}, session=s)
            a.update_one({"_id": "bob"}, {"$inc": {"bal": 30}}, session=s)
            b.insert_one({"_id": 1, "from": "alice", "to": "bob", "amount": 30}, session=s)
            c.insert_one({"_id": 1, "what": "transfer"}, session=s)
            assert other[db2.name]["audit"].find_one({"_id": 1}) is None
            assert other[db1.name]["accounts"].find_one({"_id": "bob"}) == {"_id": "bob", "bal": 0}
    assert list(other[db1.name]["accounts"].find({}, sort=[("_id", 1)])) == [
        {"_id": "alice", "bal": 70},
        {"_id": "bob", "bal": 30},
    ]
    assert other[db1.name]["ledger"].count_documents({"_id": 1}) == 1
    assert other[db2.name]["audit"].count_documents({"_id": 1}) == 1

    with client.start_session() as s:
        s.start_transaction()
        a.update_one({"_id": "alice"}, {"$inc": {"bal": -70}}, session=s)
        b.insert_one({"_id": 2}, session=s)
        c.insert_one({"_id": 2}, session=s)
        s.abort_transaction()
    assert other[db1.name]["accounts"].find_one({"_id": "alice"}) == {"_id": "alice", "bal": 70}
    assert other[db1.name]["ledger"].find_one({"_id": 2}) is None
    assert other[db2.name]["audit"].find_one({"_id": 2}) is None


def test_an_insert_inside_a_transaction_creates_its_collection(db, other):
    outside = other[db.name]
    db["existing"].insert_one({"_id": 0})  # the database exists; the collections do not
    with db.client.start_session() as s:
        with s.start_transaction():
            db["made_in_txn"].insert_one({"_id": 1}, session=s)
            assert db["made_in_txn"].find_one({}, session=s) == {"_id": 1}
            assert "made_in_txn" not in outside.list_collection_names()
    assert "made_in_txn" in outside.list_collection_names()
    assert list(outside["made_in_txn"].find({})) == [{"_id": 1}]

    with db.client.start_session() as s:
        s.start_transaction()
        db["rolled_back"].insert_one({"_id": 1}, session=s)
        s.abort_transaction()
    assert "rolled_back" not in outside.list_collection_names()
    assert outside["rolled_back"].find_one({}) is None


# ------------------------------------------------------------------ write conflicts


def _second_writer(client: MongoClient, coll, update) -> tuple[OperationFailure | None, float]:
    """In a transaction of its own, applies `update` to _id 1; returns the error and its time."""
    with client.start_session() as s2:
        s2.start_transaction()
        started = time.monotonic()
        try:
            coll.update_one({"_id": 1}, update, session=s2)
        except OperationFailure as e:
            return e, time.monotonic() - started
        finally:
            if s2.in_transaction:
                s2.abort_transaction()
        return None, time.monotonic() - started


def test_second_writer_of_a_document_gets_write_conflict_at_once(client, coll, other):
    coll.insert_one({"_id": 1, "n": 0})
    with client.start_session() as s1:
        s1.start_transaction()
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
        with ThreadPoolExecutor(1) as pool:
            err, took = pool.submit(_second_writer, client, coll, {"$inc": {"n": 10}}).result(
                timeout=THREAD_TIMEOUT_S
            )
        assert err is not None, "the second writer's update succeeded while the first transaction held the document"
        assert_code(err, 112, "WriteConflict")
        assert err.has_error_label("TransientTransactionError"), err.details
        assert took < FAIL_FAST_S, f"the second writer waited {took:.1f} s for its WriteConflict"
        s1.commit_transaction()
    assert _other_coll(other, coll).find_one({"_id": 1}) == {"_id": 1, "n": 1}


def _on_sqlite(srv: DocgateServer) -> bool:
    return srv.backend.startswith("sqlite:")


SQLITE_HOLDS_EVERY_WRITER = (
    "docgate on SQLite, as its README documents (Transactions): one writer at a time; a transaction "
    "that has written and idles 1 s holding the write lock is aborted (251 'it held the database's "
    "write lock while idle'), so the first transaction's commit fails where MongoDB commits it"
)


def test_writes_of_other_documents_go_ahead_while_a_transaction_is_open(client, coll, other, txn_server, request):
    if _on_sqlite(txn_server):
        request.applymarker(pytest.mark.xfail(reason=SQLITE_HOLDS_EVERY_WRITER, strict=True))
    coll.insert_many([{"_id": 1, "n": 0}, {"_id": 2, "n": 0}, {"_id": 3, "n": 0}])
    outside = _other_coll(other, coll)
    with client.start_session() as s1:
        s1.start_transaction()
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
        started = time.monotonic()
        with _client(txn_server, retryWrites=False) as plain:
            plain[coll.database.name][coll.name].update_one({"_id": 2}, {"$inc": {"n": 1}})
            plain[coll.database.name][coll.name].insert_one({"_id": 4})
        with other.start_session() as s2:
            with s2.start_transaction():
                outside.update_one({"_id": 3}, {"$inc": {"n": 1}}, session=s2)
        took = time.monotonic() - started
        s1.commit_transaction()
    assert took < FAIL_FAST_S, f"writes of other documents waited {took:.1f} s for an open transaction"
    assert list(outside.find({}, sort=[("_id", 1)])) == [
        {"_id": 1, "n": 1},
        {"_id": 2, "n": 1},
        {"_id": 3, "n": 1},
        {"_id": 4},
    ]


def test_a_plain_write_of_a_held_document_waits_for_the_transaction_then_applies(client, coll, other):
    coll.insert_one({"_id": 1, "n": 0})
    with client.start_session() as s1:
        s1.start_transaction()
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
        with ThreadPoolExecutor(1) as pool:
            plain = pool.submit(lambda: _other_coll(other, coll).update_one({"_id": 1}, {"$inc": {"n": 10}}))
            time.sleep(0.5)
            assert not plain.done(), "a plain write of a document a transaction holds did not wait for it"
            s1.commit_transaction()
            assert plain.result(timeout=THREAD_TIMEOUT_S).modified_count == 1
    assert _other_coll(other, coll).find_one({"_id": 1}) == {"_id": 1, "n": 11}


def test_with_transaction_retries_a_write_conflict_to_success(client, coll, other):
    coll.insert_one({"_id": 1, "n": 0})
    conflicts: list[OperationFailure] = []
    conflicted = threading.Event()
    calls = 0

    def callback(s):
        nonlocal calls
        calls += 1
        try:
            coll.update_one({"_id": 1}, {"$inc": {"n": 10}}, session=s)
        except OperationFailure as e:
            conflicts.append(e)
            conflicted.set()
            raise
        return "done"

    def convenient() -> str:
        with client.start_session() as s2:
            return s2.with_transaction(callback)

    with client.start_session() as s1:
        s1.start_transaction()
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(convenient)
            assert conflicted.wait(THREAD_TIMEOUT_S), "with_transaction's first attempt neither failed nor finished"
            s1.commit_transaction()
            assert result.result(timeout=60) == "done"
    assert conflicts and conflicts[0].code == 112, [c.details for c in conflicts]
    assert conflicts[0].has_error_label("TransientTransactionError"), conflicts[0].details
    assert calls >= 2
    assert _other_coll(other, coll).find_one({"_id": 1}) == {"_id": 1, "n": 11}


def test_with_transaction_read_modify_write_under_contention_loses_no_update(client, coll, other):
    # 8 threads, 15 transactions each, every one reading the counter and writing it back plus a
    # log document: snapshot isolation with write conflicts means no increment is lost and no
    # log entry is written by a transaction that did not commit.
    coll.insert_one({"_id": "counter", "n": 0})
    log = coll.database["log"]

    def worker(w: int) -> int:
        for i in range(15):
            def callback(s):
                current = coll.find_one({"_id": "counter"}, session=s)["n"]
                coll.update_one({"_id": "counter"}, {"$set": {"n": current + 1}}, session=s)
                log.insert_one({"w": w, "i": i}, session=s)

            with client.start_session() as s:
                s.with_transaction(callback)
        return w

    with ThreadPoolExecutor(8) as pool:
        for f in [pool.submit(worker, w) for w in range(8)]:
            f.result(timeout=120)
    assert _other_coll(other, coll).find_one({"_id": "counter"}) == {"_id": "counter", "n": 120}
    assert other[log.database.name][log.name].count_documents({}) == 120
    assert transactions_status(client)["currentOpen"] == 0


def test_with_transaction_commits_and_returns_the_callback_result(client, coll, other):
    with client.start_session() as s:
        got = s.with_transaction(lambda s: coll.insert_one({"_id": 1}, session=s).inserted_id)
    assert got == 1
    assert _other_coll(other, coll).find_one({"_id": 1}) == {"_id": 1}


# ------------------------------------------------------------------ transaction commands


# The two tests below choose txnNumbers themselves: they use a client of their own, whose
# sessions are new to the server (pymongo pools server sessions, and a pooled session may
# have used higher numbers, which would be 225 TransactionTooOld), and closed after the test.


def test_unknown_transaction_is_no_such_transaction(txn_server, request):
    with _client(txn_server) as client:
        _unknown_transaction(client, client[_db_name(request)]["items"])


def _unknown_transaction(client, coll):
    coll.insert_one({"_id": 0})
    with client.start_session() as s:
        # A statement of a transaction that was never started.
        with pytest.raises(OperationFailure) as err:
            coll.database.command("find", coll.name, txnNumber=Int64(7), autocommit=False, session=s)
        assert_code(err.value, 251, "NoSuchTransaction")
        assert err.value.has_error_label("TransientTransactionError"), err.value.details
        # commitTransaction and abortTransaction of it.
        for command in ("commitTransaction", "abortTransaction"):
            with pytest.raises(OperationFailure) as err:
                client.admin.command(command, 1, txnNumber=Int64(8), autocommit=False, session=s)
            assert_code(err.value, 251, "NoSuchTransaction")


def test_commit_retried_is_idempotent_and_abort_after_commit_is_transaction_committed(txn_server, other, request):
    with _client(txn_server) as client:
        _commit_retried(client, client[_db_name(request)]["items"], other)


def _commit_retried(client, coll, other):
    with client.start_session() as s:
        txn = {"txnNumber": Int64(1), "autocommit": False}
        reply = coll.database.command(
            "insert", coll.name, documents=[{"_id": 1}], startTransaction=True, session=s, **txn
        )
        assert reply["n"] == 1
        assert client.admin.command("commitTransaction", 1, session=s, **txn)["ok"] == 1.0
        # The driver retries a commit whose answer it lost: the same command again is ok.
        assert client.admin.command("commitTransaction", 1, session=s, **txn)["ok"] == 1.0
        with pytest.raises(OperationFailure) as err:
            client.admin.command("abortTransaction", 1, session=s, **txn)
        assert_code(err.value, 256, "TransactionCommitted")
    assert list(_other_coll(other, coll).find({})) == [{"_id": 1}]


def test_commit_transaction_called_twice_through_pymongo(client, coll, other):
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        s.commit_transaction()
        s.commit_transaction()  # pymongo re-sends commitTransaction for the same txnNumber
    assert _other_coll(other, coll).count_documents({}) == 1


def test_count_command_inside_a_transaction_is_refused_and_count_documents_works(client, coll):
    coll.insert_many([{"_id": 1}, {"_id": 2}])
    with client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": 3}, session=s)
            assert coll.count_documents({}, session=s) == 3  # an aggregate: allowed
        s.start_transaction()
        with pytest.raises(OperationFailure) as err:
            coll.database.command("count", coll.name, session=s)
        assert_code(err.value, 263, "OperationNotSupportedInTransaction")
        s.abort_transaction()
    assert coll.count_documents({}) == 3


def test_a_transaction_older_than_its_lifetime_is_aborted_by_the_server(make_server, request):
    srv = make_server("--transaction-lifetime-limit-seconds", "1")
    with _client(srv) as c:
        coll = c[_db_name(request)]["items"]
        coll.insert_one({"_id": 0})
        before = transactions_status(c)
        with c.start_session() as s:
            s.start_transaction()
            coll.insert_one({"_id": 1}, session=s)
            time.sleep(3.5)
            with pytest.raises(OperationFailure) as err:
                coll.insert_one({"_id": 2}, session=s)
            assert_code(err.value, 251, "NoSuchTransaction")
            s.abort_transaction()
        assert list(coll.find({})) == [{"_id": 0}]
        coll.insert_one({"_id": 1})  # the expired transaction holds nothing any more
        after = transactions_status(c)
        assert after["currentOpen"] == 0, after
        assert after["totalAborted"] >= before["totalAborted"] + 1, (before, after)
        assert after["totalCommitted"] == before["totalCommitted"], (before, after)


def test_an_idle_transaction_lives_until_its_lifetime_limit(client, coll, other):
    # Only --transaction-lifetime-limit-seconds (default 60) ends an idle transaction that
    # nobody waits for (on SQLite, one idle a second while another writer waits for the
    # write lock is aborted: README, Transactions).
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        time.sleep(3)
        coll.insert_one({"_id": 2}, session=s)
        s.commit_transaction()
    assert _other_coll(other, coll).count_documents({}) == 2


# ------------------------------------------------------------------ serverStatus


def test_server_status_counts_transactions_and_sessions(client, coll):
    before = transactions_status(client)
    for key in ("currentOpen", "totalStarted", "totalCommitted", "totalAborted"):
        assert isinstance(before[key], int) and before[key] >= 0, before
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        during = transactions_status(client)
        assert during["currentOpen"] == before["currentOpen"] + 1, (before, during)
        assert during["totalStarted"] == before["totalStarted"] + 1, (before, during)
        s.commit_transaction()
        s.start_transaction()
        coll.insert_one({"_id": 2}, session=s)
        s.abort_transaction()
        status = client.admin.command("serverStatus")
    after = status["transactions"]
    assert after["currentOpen"] == before["currentOpen"], (before, after)
    assert after["totalStarted"] == before["totalStarted"] + 2, (before, after)
    assert after["totalCommitted"] == before["totalCommitted"] + 1, (before, after)
    assert after["totalAborted"] == before["totalAborted"] + 1, (before, after)
    sessions = status["logicalSessionRecordCache"]["activeSessionsCount"]
    assert isinstance(sessions, int) and sessions >= 1, status["logicalSessionRecordCache"]
    connections = status["connections"]
    assert connections["current"] >= 1 and connections["totalCreated"] >= connections["current"], connections


# ------------------------------------------------------------------ retryable writes


def fail_point(client: MongoClient, mode, data=None) -> dict:
    cmd = {"configureFailPoint": "failCommand", "mode": mode}
    if data is not None:
        cmd["data"] = data
    return client.admin.command(cmd)


@pytest.fixture(scope="module")
def fp_client(fp_server):
    c = _client(fp_server)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def fp_other(fp_server):
    c = _client(fp_server)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def failpoints(fp_client):
    """The fail point server's client; the fail point is off again after the test."""
    yield fp_client
    fail_point(fp_client, "off")


@pytest.fixture
def fp_coll(fp_client, request):
    return fp_client[_db_name(request)]["items"]


def test_configure_fail_point_needs_enable_test_commands(server):
    # conftest's shared server runs without --enable-test-commands.
    with server.client() as plain:
        with pytest.raises(OperationFailure) as err:
            plain.admin.command("configureFailPoint", "failCommand", mode="off")
    assert_code(err.value, 59, "CommandNotFound")


def test_insert_retried_after_the_connection_closed_lands_once(failpoints, fp_coll, fp_server):
    client = failpoints
    created = client.admin.command("serverStatus")["connections"]["totalCreated"]
    fail_point(client, {"times": 1}, {"failCommands": ["insert"], "closeConnection": True})
    assert fp_coll.insert_one({"_id": 1, "x": 11}).inserted_id == 1
    assert list(fp_coll.find({})) == [{"_id": 1, "x": 11}]
    # The fail point did fire: the driver had to open a new connection.
    assert client.admin.command("serverStatus")["connections"]["totalCreated"] > created
    # times: 1 is spent: the next insert goes through on the first try.
    fp_coll.insert_one({"_id": 2})
    assert fp_coll.count_documents({}) == 2


def test_without_retry_writes_a_closed_connection_is_an_error_and_nothing_is_written(failpoints, fp_coll, fp_server):
    fail_point(failpoints, {"times": 1}, {"failCommands": ["insert"], "closeConnection": True})
    with _client(fp_server, retryWrites=False) as plain:
        with pytest.raises(AutoReconnect):
            plain[fp_coll.database.name][fp_coll.name].insert_one({"_id": 1})
    # failCommand closes the connection before the command runs.
    assert fp_coll.find_one({"_id": 1}) is None


def test_insert_retried_after_shutdown_in_progress_labelled_retryable(failpoints, fp_coll):
    fail_point(
        failpoints,
        {"times": 1},
        {"failCommands": ["insert"], "errorCode": 91, "errorLabels": ["RetryableWriteError"]},
    )
    assert fp_coll.insert_one({"_id": 1, "x": 11}).inserted_id == 1
    assert list(fp_coll.find({})) == [{"_id": 1, "x": 11}]


def test_server_labels_a_retryable_error_code_itself(failpoints, fp_coll):
    # No errorLabels: MongoDB (4.4+) adds RetryableWriteError to a retryable code such as 91
    # on a retryable write, and the driver retries on that label.
    fail_point(failpoints, {"times": 1}, {"failCommands": ["insert"], "errorCode": 91})
    assert fp_coll.insert_one({"_id": 1}).inserted_id == 1
    assert fp_coll.count_documents({}) == 1


def test_empty_error_labels_override_the_server_labels(failpoints, fp_coll):
    fail_point(
        failpoints,
        {"times": 1},
        {"failCommands": ["insert"], "errorCode": 11600, "errorLabels": []},
    )
    # pymongo raises 11600 (a "node is shutting down" code) as NotPrimaryError.
    with pytest.raises(NotPrimaryError) as err:
        fp_coll.insert_one({"_id": 1})
    assert err.value.details.get("code") == 11600, err.value.details
    assert not err.value.has_error_label("RetryableWriteError"), err.value.details
    assert fp_coll.find_one({"_id": 1}) is None


def test_write_applied_then_retryable_write_concern_error_is_not_applied_twice(failpoints, fp_coll):
    # The insert runs, then its answer carries a writeConcernError labelled retryable: the
    # driver sends the same insert (same lsid and txnNumber) again, and the server answers
    # from its record of the first one instead of inserting again (which would be E11000).
    fp_coll.insert_one({"_id": 0})
    fail_point(
        failpoints,
        {"times": 1},
        {
            "failCommands": ["insert"],
            "errorLabels": ["RetryableWriteError"],
            "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"},
        },
    )
    assert fp_coll.insert_one({"_id": 3, "x": 33}).inserted_id == 3
    assert list(fp_coll.find({}, sort=[("_id", 1)])) == [{"_id": 0}, {"_id": 3, "x": 33}]


def test_commit_succeeds_after_a_connection_error(failpoints, fp_coll, fp_other):
    # The transactions specification's "commitTransaction succeeds after connection error":
    # the connection closes on commitTransaction, pymongo sends it again on a new connection,
    # and the transaction — which belongs to the session, not the connection — commits.
    fail_point(failpoints, {"times": 1}, {"failCommands": ["commitTransaction"], "closeConnection": True})
    with failpoints.start_session() as s:
        s.start_transaction()
        fp_coll.insert_one({"_id": 1}, session=s)
        s.commit_transaction()
    assert list(_other_coll(fp_other, fp_coll).find({})) == [{"_id": 1}]


def test_with_transaction_succeeds_after_a_transient_error_on_a_statement(failpoints, fp_coll, fp_other):
    # A statement failing with a label-bearing error (here 112 from the fail point): the
    # convenient API aborts, runs the callback again, and commits once.
    fail_point(failpoints, {"times": 1}, {"failCommands": ["insert"], "errorCode": 112})
    calls = 0

    def callback(s):
        nonlocal calls
        calls += 1
        fp_coll.insert_one({"_id": calls}, session=s)

    with failpoints.start_session() as s:
        s.with_transaction(callback)
    assert calls == 2
    assert list(_other_coll(fp_other, fp_coll).find({})) == [{"_id": 2}]
