"""The replica-set face through pymongo: a client given replicaSet="docgate" (no
directConnection) discovers the one-member set, finds its primary and reads and writes;
the replSet commands answer; with --enable-test-commands the failCommand fail point fails
pymongo's commands as MongoDB's does.

Servers of their own (DocgateServer with fresh_storage=True): the fail point is global to a
server, and the shared one must not see it.
"""

from __future__ import annotations

import pytest
from bson import Timestamp
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from conftest import DocgateServer


@pytest.fixture(scope="module")
def test_commands_server(tmp_path_factory):
    srv = DocgateServer(
        tmp_path_factory.mktemp("replset"), extra_args=["--enable-test-commands"], fresh_storage=True
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def replica_set_client(server: DocgateServer, **kwargs) -> MongoClient:
    return MongoClient(
        f"mongodb://127.0.0.1:{server.port}/",
        replicaSet="docgate",
        serverSelectionTimeoutMS=10_000,
        **kwargs,
    )


def test_a_replica_set_client_discovers_the_primary(server):
    with replica_set_client(server) as client:
        coll = client["rs_discovery"]["items"]
        coll.drop()
        coll.insert_one({"_id": 1, "name": "one"})
        coll.insert_many([{"_id": 2}, {"_id": 3}])
        assert coll.find_one({"_id": 1})["name"] == "one"
        assert coll.count_documents({}) == 3
        assert client.primary == ("127.0.0.1", server.port)
        description = client.topology_description
        assert description.topology_type_name == "ReplicaSetWithPrimary"
        (member,) = description.server_descriptions().values()
        assert member.server_type_name == "RSPrimary"
        assert member.replica_set_name == "docgate"


def test_replies_carry_the_cluster_time(server):
    with replica_set_client(server) as client:
        reply = client.admin.command("ping")
        assert isinstance(reply["operationTime"], Timestamp)
        assert isinstance(reply["$clusterTime"]["clusterTime"], Timestamp)
        assert reply["operationTime"] <= reply["$clusterTime"]["clusterTime"]


def test_repl_set_commands(server):
    with replica_set_client(server) as client:
        status = client.admin.command("replSetGetStatus")
        assert status["ok"] == 1
        assert status["set"] == "docgate"
        assert status["myState"] == 1
        assert status["members"][0]["stateStr"] == "PRIMARY"
        config = client.admin.command("replSetGetConfig")["config"]
        assert config["_id"] == "docgate"
        assert config["members"][0]["host"] == f"127.0.0.1:{server.port}"
        with pytest.raises(OperationFailure) as initiate:
            client.admin.command("replSetInitiate", {})
        assert initiate.value.code == 23


def test_fail_command_fails_pymongo_commands(test_commands_server):
    with replica_set_client(test_commands_server, retryWrites=False, retryReads=False) as client:
        coll = client["rs_failpoint"]["items"]
        client.admin.command(
            "configureFailPoint",
            "failCommand",
            mode={"times": 1},
            data={"failCommands": ["find"], "errorCode": 2, "errorLabels": ["Custom"]},
        )
        with pytest.raises(OperationFailure) as failed:
            coll.find_one({})
        assert failed.value.code == 2
        assert failed.value.has_error_label("Custom")
        assert coll.find_one({}) is None  # times: 1 is used up


def test_a_retryable_write_is_retried_after_a_fail_point_error(test_commands_server):
    with replica_set_client(test_commands_server) as client:
        coll = client["rs_failpoint"]["retried"]
        coll.drop()
        client.admin.command(
            "configureFailPoint",
            "failCommand",
            mode={"times": 1},
            data={"failCommands": ["insert"], "errorCode": 91},
        )
        # The error carries RetryableWriteError, so pymongo retries once and succeeds.
        coll.insert_one({"_id": 1})
        assert coll.count_documents({}) == 1
