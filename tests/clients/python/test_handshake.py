"""Connecting: the handshake, hello/isMaster fields, ping, buildInfo and unknown commands."""

from __future__ import annotations

import datetime

import pytest
from pymongo.errors import OperationFailure


def test_ping(client):
    reply = client.admin.command("ping")
    assert reply["ok"] == 1


def test_ping_on_any_database(client):
    assert client["some_app_db"].command("ping")["ok"] == 1


def test_hello_fields(client):
    hello = client.admin.command("hello")
    assert hello["ok"] == 1
    assert hello["isWritablePrimary"] is True
    assert hello["maxWireVersion"] == 21
    assert 0 <= hello["minWireVersion"] <= hello["maxWireVersion"]
    assert hello["maxBsonObjectSize"] == 16 * 1024 * 1024
    assert hello["maxMessageSizeBytes"] == 48_000_000
    assert hello["maxWriteBatchSize"] == 100_000
    assert isinstance(hello["localTime"], datetime.datetime)
    # The default face is the primary of a one-member replica set, not a mongos.
    assert hello["setName"] == "docgate"
    assert hello.get("msg") != "isdbgrid"


def test_legacy_is_master(client):
    reply = client.admin.command("isMaster")
    assert reply["ok"] == 1
    assert reply["ismaster"] is True
    assert reply["maxWireVersion"] == 21


def test_driver_sees_a_writable_primary(client, server):
    # What pymongo concluded from the handshake (directConnection: a Single topology whose
    # one server is the replica set's primary; see test_replica_set.py for discovery).
    client.admin.command("ping")
    description = client.topology_description
    assert description.topology_type_name == "Single"
    (server_description,) = description.server_descriptions().values()
    assert server_description.server_type_name == "RSPrimary"
    assert server_description.is_writable
    assert server_description.max_wire_version == 21
    assert server_description.address == ("127.0.0.1", server.port)


def test_build_info(client):
    info = client.server_info()
    assert info["ok"] == 1
    assert isinstance(info["version"], str) and info["version"]


def test_unknown_command_is_command_not_found(client):
    with pytest.raises(OperationFailure) as excinfo:
        client.admin.command("noSuchCommandAtAll")
    assert excinfo.value.code == 59
    assert excinfo.value.details["codeName"] == "CommandNotFound"
    assert excinfo.value.details["ok"] == 0


def test_connection_survives_an_error(client):
    with pytest.raises(OperationFailure):
        client.admin.command("noSuchCommandAtAll")
    assert client.admin.command("ping")["ok"] == 1
