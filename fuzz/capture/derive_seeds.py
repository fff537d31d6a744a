#!/usr/bin/env python3
"""Turns recorded client frames (relay.py's output) into the seed corpora of the fuzz targets:

- corpus/wire: frames of every distinct shape (opcode, compressor, command, sections), as sent;
- corpus/command: uncompressed OP_MSG / OP_QUERY frames, a few per command name;
- corpus/filter_plan: BSON {filter, sort?, documents?} from the filters of find, count,
  delete, update, findAndModify and a leading $match, with documents the same collection
  was sent;
- corpus/update: BSON {u, arrayFilters?, q?, document?} from update and findAndModify
  statements, with a document the same collection was sent;
- corpus/extended_json: the sent documents, filters and updates as relaxed and canonical
  Extended JSON (what a REST client posts).

Each file is named by the SHA-1 of its content (duplicates kept once); each corpus is rebuilt
from scratch and capped, so the corpora stay small.

Usage: derive_seeds.py FRAMES_DIR CORPUS_DIR  (with the pymongo venv's python: needs bson,
python-snappy and backports.zstd for compressed frames)
"""

import collections
import hashlib
import os
import shutil
import struct
import sys
import zlib

import bson
from bson import json_util
from bson.json_util import CANONICAL_JSON_OPTIONS, RELAXED_JSON_OPTIONS

OP_QUERY, OP_COMPRESSED, OP_MSG = 2004, 2012, 2013
PER_SHAPE = {"wire": 2, "command": 3}
CAP = {"wire": 120, "command": 150, "filter_plan": 150, "update": 120, "extended_json": 150}


def decompress(compressor, data):
    if compressor == 0:
        return data
    if compressor == 1:
        import snappy
        return snappy.uncompress(data)
    if compressor == 2:
        return zlib.decompress(data)
    if compressor == 3:
        try:
            from backports import zstd
        except ImportError:
            import zstd
        return zstd.decompress(data)
    raise ValueError(f"compressor {compressor}")


def cstring(data, at):
    end = data.index(b"\x00", at)
    return data[at:end].decode(), end + 1


def parse(frame):
    """(opcode, compressor, body with kind-1 sequences merged, uncompressed frame) or None."""
    length, request_id, response_to, opcode = struct.unpack_from("<iiii", frame)
    payload, compressor = frame[16:], None
    if opcode == OP_COMPRESSED:
        opcode, _size, compressor = struct.unpack_from("<iiB", payload)
        payload = decompress(compressor, payload[9:])
    plain = struct.pack("<iiii", 16 + len(payload), request_id, response_to, opcode) + payload
    if opcode == OP_MSG:
        flags = struct.unpack_from("<I", payload)[0]
        end = len(payload) - (4 if flags & 1 else 0)
        at, body, sequences = 4, None, {}
        while at < end:
            kind = payload[at]
            at += 1
            size = struct.unpack_from("<i", payload, at)[0]
            if kind == 0:
                body = bson.decode(payload[at:at + size])
            else:
                identifier, docs_at = cstring(payload, at + 4)
                docs = []
                while docs_at < at + size:
                    doc_size = struct.unpack_from("<i", payload, docs_at)[0]
                    docs.append(bson.decode(payload[docs_at:docs_at + doc_size]))
                    docs_at += doc_size
                sequences[identifier] = docs
            at += size
        body = dict(body or {})
        body.update(sequences)
        return opcode, compressor, body, plain, sorted(sequences)
    if opcode == OP_QUERY:
        _flags = struct.unpack_from("<i", payload)[0]
        _name, at = cstring(payload, 4)
        size = struct.unpack_from("<i", payload, at + 8)[0]
        query = bson.decode(payload[at + 8:at + 8 + size])
        body = query.get("$query", query) if isinstance(query, dict) else {}
        return opcode, compressor, dict(body), plain, []
    return None


class Corpus:
    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        self.name = name
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.seen = set()

    def add(self, data):
        digest = hashlib.sha1(data).hexdigest()
        if digest in self.seen or len(self.seen) >= CAP[self.name]:
            return
        self.seen.add(digest)
        with open(os.path.join(self.dir, digest), "wb") as f:
            f.write(data)


def main():
    frames_dir, corpus_dir = sys.argv[1], sys.argv[2]
    corpora = {name: Corpus(corpus_dir, name) for name in CAP}
    shapes = collections.Counter()
    documents = collections.defaultdict(list)  # collection -> sent documents
    filters, updates = [], []  # (collection, ...)
    for name in sorted(os.listdir(frames_dir)):
        with open(os.path.join(frames_dir, name), "rb") as f:
            frame = f.read()
        try:
            parsed = parse(frame)
        except Exception as error:  # a frame this script cannot read still seeds `wire`
            print(f"{name}: {error}")
            corpora["wire"].add(frame)
            continue
        if parsed is None:
            continue
        opcode, compressor, body, plain, sequences = parsed
        command = next(iter(body), "")
        shape = (opcode, compressor, command, tuple(sequences))
        shapes[shape] += 1
        if shapes[shape] <= PER_SHAPE["wire"]:
            corpora["wire"].add(frame)
        if shapes[shape] <= PER_SHAPE["command"] and compressor is None:
            corpora["command"].add(plain)
        target = body.get(command)
        coll = target if isinstance(target, str) else ""
        if command == "insert":
            documents[coll].extend(body.get("documents", []))
        elif command in ("find", "count", "delete", "update", "findAndModify", "aggregate"):
            if command in ("find", "count"):
                filters.append((coll, body.get("filter", body.get("query")), body.get("sort")))
            elif command == "findAndModify":
                filters.append((coll, body.get("query"), body.get("sort")))
                updates.append((coll, body.get("update"), body.get("arrayFilters"), body.get("query")))
            elif command == "aggregate":
                first = (body.get("pipeline") or [{}])[0]
                if isinstance(first, dict) and "$match" in first:
                    filters.append((coll, first["$match"], None))
            else:
                for statement in body.get("deletes", []) + body.get("updates", []):
                    filters.append((coll, statement.get("q"), None))
                    if "u" in statement:
                        updates.append((coll, statement["u"], statement.get("arrayFilters"), statement.get("q")))
    # Documents first (a few per collection): the extended_json cap must not be spent on
    # filters or on one collection of look-alike documents.
    for coll in sorted(documents):
        for document in documents[coll][:6]:
            for options in (RELAXED_JSON_OPTIONS, CANONICAL_JSON_OPTIONS):
                corpora["extended_json"].add(json_util.dumps(document, json_options=options).encode())
    for coll, filter_, sort in filters:
        if not isinstance(filter_, dict):
            continue
        seed = {"filter": filter_}
        if isinstance(sort, dict) and sort:
            seed["sort"] = sort
        if documents.get(coll):
            seed["documents"] = documents[coll][:8]
        corpora["filter_plan"].add(bson.encode(seed))
        corpora["extended_json"].add(json_util.dumps(filter_, json_options=RELAXED_JSON_OPTIONS).encode())
    for n, (coll, update, array_filters, query) in enumerate(updates):
        if not isinstance(update, (dict, list)):
            continue
        seed = {"u": update}
        if array_filters:
            seed["arrayFilters"] = array_filters
        if isinstance(query, dict):
            seed["q"] = query
        sent = documents.get(coll) or []
        if sent:
            seed["document"] = sent[n % len(sent)]
        corpora["update"].add(bson.encode(seed))
        corpora["extended_json"].add(json_util.dumps(update, json_options=RELAXED_JSON_OPTIONS).encode())
    for name, corpus in sorted(corpora.items()):
        print(f"{name}: {len(corpus.seen)} seeds")


if __name__ == "__main__":
    main()
