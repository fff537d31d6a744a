"""Lossless documents: what goes in comes back byte for byte.

Documents are read back as RawBSONDocument, so the comparison is on the exact
bytes the server sent, against bson.encode() of what was inserted: type (Int32
vs Int64 vs Double), key order, -0.0, NaN payloads, Decimal128 digits and binary
subtypes all count.
"""

from __future__ import annotations

import datetime
import math
import uuid

import bson
import pytest
from bson import (
    Binary,
    Code,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
)
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

RAW = CodecOptions(document_class=RawBSONDocument)
UTC = datetime.timezone.utc


def raw_collection(coll):
    return coll.with_options(codec_options=RAW)


def every_type_document() -> dict:
    return {
        "_id": ObjectId("65a1b2c3d4e5f60718293a4b"),
        "zeta_first": "keys stay in insertion order, not sorted",
        "string": "plain",
        "unicode": "héllo wörld — 日本語 — Ελληνικά — emoji 🎉🚀",
        "empty_string": "",
        "int32": 42,
        "int32_min": -(2**31),
        "int32_max": 2**31 - 1,
        "int64": Int64(2**40 + 3),
        "int64_small": Int64(7),  # an Int64 that would fit in an Int32 stays an Int64
        "int64_min": Int64(-(2**63)),
        "double": 3.141592653589793,
        "double_whole": 2.0,  # a whole double stays a double
        "double_neg_zero": -0.0,
        "double_nan": math.nan,
        "double_inf": math.inf,
        "double_ninf": -math.inf,
        "double_tiny": 5e-324,
        "decimal": Decimal128("1234.5600"),
        "decimal_neg_zero": Decimal128("-0"),
        "decimal_nan": Decimal128("NaN"),
        "decimal_inf": Decimal128("-Infinity"),
        "decimal_big": Decimal128("9.999999999999999999999999999999999E+6144"),
        "date": datetime.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=UTC),
        "date_epoch": datetime.datetime(1970, 1, 1, tzinfo=UTC),
        "date_before_epoch": datetime.datetime(1901, 12, 13, 20, 45, 52, tzinfo=UTC),
        "bool_true": True,
        "bool_false": False,
        "null": None,
        "binary_generic": Binary(b"\x00\x01\x02\xff\xfe", 0),
        "binary_empty": Binary(b"", 0),
        "binary_uuid": Binary(uuid.UUID("12345678-1234-5678-1234-567812345678").bytes, 4),
        "binary_md5": Binary(bytes(range(16)), 5),
        "binary_user": Binary(b"user defined \x00 bytes", 0x80),
        "regex": Regex("^ab+c.*$", "imsx"),
        "regex_plain": Regex("a|b", ""),
        "timestamp": Timestamp(1_700_000_000, 7),
        "timestamp_zero": Timestamp(0, 0),
        "code": Code("function () { return 1; }"),
        "min_key": MinKey(),
        "max_key": MaxKey(),
        "object_id": ObjectId("000000000000000000000001"),
        "nested": {
            "b": 1,
            "a": {"d": [1, [2, [3, {"e": None}]]], "c": "x"},
            "dotted.key": "a dot inside a nested field name",
            "$dollar": "a nested $-prefixed field name",
        },
        "array": [1, "two", 3.0, Int64(4), {"five": 5}, [6, [7]], [], {}, None, MinKey()],
        "empty_array": [],
        "empty_doc": {},
        "deep": {"l1": {"l2": {"l3": {"l4": {"l5": [{"l6": {"l7": "bottom"}}]}}}}},
    }


def assert_same_bytes(got: RawBSONDocument | None, original: dict) -> None:
    assert got is not None, "document not found"
    expected = bson.encode(original)
    if got.raw != expected:
        # Name the fields that differ before failing on the bytes.
        got_doc = bson.decode(got.raw, codec_options=CodecOptions(tz_aware=True))
        exp_doc = bson.decode(expected, codec_options=CodecOptions(tz_aware=True))
        diffs = [
            k
            for k in set(got_doc) | set(exp_doc)
            if k not in got_doc
            or k not in exp_doc
            or bson.encode({"v": got_doc[k]}) != bson.encode({"v": exp_doc[k]})
        ]
        if list(got_doc) != list(exp_doc):
            diffs.append(f"key order: {list(got_doc)}")
        raise AssertionError(f"bytes differ; differing fields: {sorted(map(str, diffs))}")
    assert got.raw == expected


def test_every_type_round_trips_byte_for_byte(coll):
    original = every_type_document()
    coll.insert_one(original)
    got = raw_collection(coll).find_one({"_id": original["_id"]})
    assert_same_bytes(got, original)


def test_raw_insert_round_trips(coll):
    # Inserting the raw bytes themselves: the driver re-orders nothing.
    original = every_type_document()
    original["_id"] = ObjectId("65a1b2c3d4e5f60718293a4c")
    coll.insert_one(RawBSONDocument(bson.encode(original)))
    got = raw_collection(coll).find_one({"_id": original["_id"]})
    assert_same_bytes(got, original)


def test_round_trip_through_find_many(coll):
    originals = []
    for i in range(20):
        doc = every_type_document()
        doc["_id"] = i
        doc["i"] = Int64(i)
        originals.append(doc)
    coll.insert_many(originals)
    got = list(raw_collection(coll).find().sort("_id", 1).batch_size(3))
    assert len(got) == 20
    for g, o in zip(got, originals):
        assert_same_bytes(g, o)


CASES = {
    "int32": 7,
    "int64": Int64(7),
    "double": 7.0,
    "double_neg_zero": -0.0,
    "double_nan": math.nan,
    "double_inf": math.inf,
    "double_ninf": -math.inf,
    "decimal128": Decimal128("0.10"),
    "decimal128_neg_zero": Decimal128("-0.00"),
    "decimal128_nan": Decimal128("NaN"),
    "datetime": datetime.datetime(2030, 6, 15, 8, 0, 0, 1000, tzinfo=UTC),
    "datetime_negative": datetime.datetime(1969, 7, 20, 20, 17, 40, tzinfo=UTC),
    "object_id": ObjectId("5f0c1a2b3c4d5e6f70819203"),
    "binary_0": Binary(b"\x00\xff", 0),
    "binary_4": Binary(uuid.UUID("00112233-4455-6677-8899-aabbccddeeff").bytes, 4),
    "binary_5": Binary(b"\x11" * 16, 5),
    "binary_80": Binary(b"custom", 0x80),
    "regex": Regex("^x.*y$", "i"),
    "timestamp": Timestamp(4_000_000_000, 4_000_000_000),
    "min_key": MinKey(),
    "max_key": MaxKey(),
    "code": Code("x = 1"),
    "string_unicode": "Zürich ☃ 𝄞",
    "string_with_nul": "before\x00after",
    "nested_array": [[1, 2], [3, [4, [5]]]],
    "key_order": {"z": 1, "a": 2, "m": {"y": 1, "b": 2}},
    "dotted_and_dollar_keys": {"a.b": 1, "$c": 2},
    "bool": False,
    "null": None,
}


@pytest.mark.parametrize("name", list(CASES))
def test_single_value_round_trips(coll, name):
    original = {"_id": name, "before": 1, "v": CASES[name], "after": Int64(2)}
    coll.insert_one(original)
    got = raw_collection(coll).find_one({"_id": name})
    assert_same_bytes(got, original)


def test_top_level_dollar_field_round_trips(coll):
    # MongoDB 5.0+ accepts $-prefixed top-level field names on insert.
    original = {"_id": 1, "$price": 50.0, "quantity": 30}
    coll.insert_one(original)
    assert_same_bytes(raw_collection(coll).find_one({"_id": 1}), original)


def test_updated_document_keeps_untouched_values_exact(coll):
    original = every_type_document()
    coll.insert_one(original)
    coll.update_one({"_id": original["_id"]}, {"$set": {"string": "changed"}})
    original["string"] = "changed"
    assert_same_bytes(raw_collection(coll).find_one({"_id": original["_id"]}), original)


def test_ids_of_every_kind_find_their_document(coll):
    ids = [
        ObjectId("65a1b2c3d4e5f60718293a4d"),
        "string-id",
        42,
        Int64(2**40),
        3.5,
        Decimal128("1.5"),
        datetime.datetime(2020, 1, 1, tzinfo=UTC),
        Binary(b"\x01\x02", 0),
        {"compound": 1, "key": "x"},
        True,
    ]
    for i, _id in enumerate(ids):
        coll.insert_one({"_id": _id, "i": i})
    for i, _id in enumerate(ids):
        got = raw_collection(coll).find_one({"_id": _id})
        assert_same_bytes(got, {"_id": _id, "i": i})
