"""Wire compression: snappy, zlib and zstd, through pymongo and on a raw socket.

pymongo falls back to uncompressed messages without a word when the server does
not agree to a compressor, so a driver round trip alone proves little. The raw
socket tests do what a driver does by hand: offer one compressor in the
handshake, check the server agreed to it, send an OP_COMPRESSED request and
read the reply.
"""

from __future__ import annotations

import itertools
import socket
import struct
import zlib

import bson
import pytest
import snappy
from backports import zstd
from pymongo import compression_support

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

COMPRESSOR_IDS = {"snappy": 1, "zlib": 2, "zstd": 3}
COMPRESS = {"snappy": snappy.compress, "zlib": zlib.compress, "zstd": zstd.compress}
DECOMPRESS = {1: snappy.uncompress, 2: zlib.decompress, 3: zstd.decompress}

ALL = ["snappy", "zlib", "zstd"]

_request_ids = itertools.count(1)


def test_pymongo_has_every_compressor():
    # Without these packages pymongo silently sends uncompressed messages.
    assert compression_support._have_snappy()
    assert compression_support._have_zlib()
    assert compression_support._have_zstd()


@pytest.mark.parametrize("compressor", ALL)
def test_round_trip_with_compressor(server, db, compressor):
    client = server.client(compressors=compressor)
    try:
        coll = client[db.name]["compressed"]
        # Large and repetitive, so that compression actually shrinks it.
        docs = [{"_id": i, "text": "docgate " * 200, "n": i} for i in range(50)]
        coll.insert_many(docs)
        got = list(coll.find().sort("_id", 1))
        assert got == docs
        assert coll.count_documents({"n": {"$gte": 25}}) == 25
        coll.update_many({}, {"$set": {"text": "short"}})
        assert coll.find_one({"_id": 3}) == {"_id": 3, "text": "short", "n": 3}
    finally:
        client.close()


# --------------------------------------------------------------------------- raw socket


def _header(length: int, request_id: int, op_code: int) -> bytes:
    return struct.pack("<iiii", length, request_id, 0, op_code)


def op_query(command: dict, db: str = "admin") -> bytes:
    body = struct.pack("<i", 0) + f"{db}.$cmd".encode() + b"\x00" + struct.pack("<ii", 0, -1)
    body += bson.encode(command)
    return _header(16 + len(body), next(_request_ids), OP_QUERY) + body


def op_msg_body(command: dict) -> bytes:
    return struct.pack("<I", 0) + b"\x00" + bson.encode(command)


def op_compressed(original_op: int, body: bytes, compressor: str) -> bytes:
    packed = COMPRESS[compressor](body)
    inner = struct.pack("<iiB", original_op, len(body), COMPRESSOR_IDS[compressor]) + packed
    return _header(16 + len(inner), next(_request_ids), OP_COMPRESSED) + inner


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    return buf


def read_reply(sock: socket.socket) -> tuple[int, dict, int | None]:
    """Returns (op_code of the carried message, the reply document, compressor id or None)."""
    length, _request_id, _response_to, op_code = struct.unpack("<iiii", _recv_exactly(sock, 16))
    body = _recv_exactly(sock, length - 16)
    compressor_id = None
    if op_code == OP_COMPRESSED:
        op_code, size, compressor_id = struct.unpack("<iiB", body[:9])
        body = DECOMPRESS[compressor_id](body[9:])
        assert len(body) == size
    if op_code == OP_REPLY:
        _flags, _cursor_id, _starting_from, n_returned = struct.unpack("<iqii", body[:20])
        assert n_returned == 1
        return op_code, bson.decode(body[20:]), compressor_id
    if op_code == OP_MSG:
        assert body[4] == 0  # a kind 0 section
        return op_code, bson.decode(body[5:]), compressor_id
    raise AssertionError(f"unexpected reply op code {op_code}")


@pytest.fixture
def raw_socket(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        yield sock
    finally:
        sock.close()


@pytest.mark.parametrize("compressor", ALL)
def test_handshake_negotiates_compressor(raw_socket, compressor):
    raw_socket.sendall(op_query({"isMaster": 1, "compression": [compressor], "client": {}}))
    op, reply, _ = read_reply(raw_socket)
    assert op == OP_REPLY
    assert reply["ok"] == 1
    assert reply["compression"] == [compressor]


def test_handshake_picks_from_offered_list(raw_socket):
    raw_socket.sendall(op_query({"isMaster": 1, "compression": ["no-such-algo", "zlib"]}))
    _, reply, _ = read_reply(raw_socket)
    assert reply["compression"] == ["zlib"]


@pytest.mark.parametrize("compressor", ALL)
def test_compressed_command_gets_a_reply(raw_socket, db, compressor):
    raw_socket.sendall(op_query({"isMaster": 1, "compression": [compressor]}))
    read_reply(raw_socket)

    raw_socket.sendall(op_compressed(OP_MSG, op_msg_body({"ping": 1, "$db": "admin"}), compressor))
    op, reply, compressor_id = read_reply(raw_socket)
    assert op == OP_MSG
    assert reply["ok"] == 1
    # A server may answer compressed or not, but only with the agreed compressor.
    assert compressor_id in (None, COMPRESSOR_IDS[compressor])

    doc = {"_id": compressor, "payload": "x" * 5000}
    insert = {"insert": "raw", "documents": [doc], "$db": db.name}
    raw_socket.sendall(op_compressed(OP_MSG, op_msg_body(insert), compressor))
    _, reply, _ = read_reply(raw_socket)
    assert reply["ok"] == 1 and reply["n"] == 1

    find = {"find": "raw", "filter": {"_id": compressor}, "$db": db.name}
    raw_socket.sendall(op_compressed(OP_MSG, op_msg_body(find), compressor))
    _, reply, _ = read_reply(raw_socket)
    assert reply["ok"] == 1
    assert reply["cursor"]["firstBatch"] == [doc]
