"""The MongoDB 7.0 expression operators docgate added late, through pymongo and the real
server: each runs in an `aggregate` `$project`, several in a `find` `$expr` and an update
pipeline, and the refused names answer MongoDB's error codes rather than 168.

Expected results are the MongoDB manual's examples where it has them ($setField's
`inventory`, $zip's `matrix`, $regexFind's `products`, $replaceAll's `inventory`,
$percentile's `testScores`, $firstN's `games`, $bitAnd's `switches`, $isoWeek's dates).
"""

from __future__ import annotations

import datetime
import math

import pytest
from bson import Decimal128, Int64, ObjectId, Timestamp
from bson.binary import Binary
from pymongo.errors import OperationFailure


@pytest.fixture
def coll(db):
    """This test's collection, emptied first: on a PostgreSQL URL the databases of an earlier
    run are still there."""
    items = db["items"]
    items.drop()
    return items


def project(coll, expression, doc=None):
    """Evaluates one expression against one document through `aggregate` + `$project`."""
    coll.delete_many({})
    coll.insert_one(dict(doc or {}, _id=1))
    out = list(coll.aggregate([{"$project": {"_id": 0, "v": expression}}]))
    return out[0].get("v", "missing")


def error_code(coll, expression, doc=None):
    with pytest.raises(OperationFailure) as err:
        project(coll, expression, doc)
    return err.value.code


def test_set_field_and_unset_field_with_dots_and_dollars(coll):
    coll.insert_many(
        [
            {"_id": 1, "item": "sweatshirt", "price": 45.99, "qty": 300},
            {"_id": 2, "item": "winter coat", "price": 499.99, "qty": 200},
        ]
    )
    out = list(
        coll.aggregate(
            [
                {
                    "$replaceWith": {
                        "$setField": {"field": "price.usd", "input": "$$ROOT", "value": "$price"}
                    }
                },
                {"$unset": "price"},
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert out == [
        {"_id": 1, "item": "sweatshirt", "qty": 300, "price.usd": 45.99},
        {"_id": 2, "item": "winter coat", "qty": 200, "price.usd": 499.99},
    ]
    # A field starting with '$' needs $literal; $unsetField removes it.
    assert project(
        coll,
        {"$unsetField": {"field": {"$literal": "$price"}, "input": {"$literal": {"$price": 1, "a": 2}}}},
    ) == {"a": 2}
    assert project(
        coll,
        {"$setField": {"field": "a", "input": {"a": 1, "b": 2}, "value": "$$REMOVE"}},
    ) == {"b": 2}
    assert error_code(coll, {"$setField": {"field": "$price", "input": "$$ROOT", "value": 1}}) == 4161108
    assert error_code(coll, {"$setField": {"field": 1, "input": "$$ROOT", "value": 1}}) == 4161107
    assert error_code(coll, {"$setField": {"field": "a", "input": 5, "value": 1}}) == 4161105


def test_set_field_in_an_update_pipeline(coll):
    coll.insert_one({"_id": 1, "a": 1})
    coll.update_one(
        {"_id": 1},
        [{"$replaceWith": {"$setField": {"field": "x.y", "input": "$$ROOT", "value": 7}}}],
    )
    assert coll.find_one({"_id": 1}) == {"_id": 1, "a": 1, "x.y": 7}


def test_n_selections_of_arrays(coll):
    games = {"score": [1293, None, 3489, 9]}
    assert project(coll, {"$firstN": {"n": 3, "input": "$score"}}, games) == [1293, None, 3489]
    assert project(coll, {"$lastN": {"n": 3, "input": "$score"}}, games) == [None, 3489, 9]
    assert project(coll, {"$maxN": {"n": 2, "input": "$score"}}, games) == [3489, 1293]
    assert project(coll, {"$minN": {"n": 2, "input": "$score"}}, games) == [9, 1293]
    assert project(coll, {"$firstN": {"n": 10, "input": [1, 2]}}) == [1, 2]
    assert error_code(coll, {"$firstN": {"n": 0, "input": [1]}}) == 5787908
    assert error_code(coll, {"$firstN": {"n": 1, "input": 7}}) == 5788200


def test_zip(coll):
    matrix = {"matrix": [[1, 2], [2, 3], [3, 4]]}
    transposed = {
        "$zip": {
            "inputs": [
                {"$arrayElemAt": ["$matrix", 0]},
                {"$arrayElemAt": ["$matrix", 1]},
                {"$arrayElemAt": ["$matrix", 2]},
            ]
        }
    }
    assert project(coll, transposed, matrix) == [[1, 2, 3], [2, 3, 4]]
    assert project(
        coll,
        {"$zip": {"inputs": [[1], [2, 3]], "useLongestLength": True, "defaults": ["a", "b"]}},
    ) == [[1, 2], ["a", 3]]
    assert project(coll, {"$zip": {"inputs": [[1], "$missing"]}}) is None
    assert error_code(coll, {"$zip": {"inputs": [[1]], "defaults": [0]}}) == 34466
    assert error_code(coll, {"$zip": {"inputs": [[1], 2]}}) == 34468


def test_statistics_as_expressions(coll):
    scores = {"scores": [62, 81, 80, 75, 68]}
    assert project(
        coll,
        {"$percentile": {"input": "$scores", "p": [0.25, 0.5, 0.75], "method": "approximate"}},
        scores,
    ) == [68.0, 75.0, 80.0]
    assert project(coll, {"$median": {"input": "$scores", "method": "approximate"}}, scores) == 75.0
    assert project(coll, {"$stdDevSamp": [1, 2, 3]}) == 1.0
    assert math.isclose(project(coll, {"$stdDevPop": "$q"}, {"q": [10, 5, 8]}), 2.0548046676563256)
    assert error_code(coll, {"$median": {"input": [1], "method": "continuous"}}) == 2


def test_string_search_and_replace(coll):
    assert project(coll, {"$indexOfBytes": ["cafétéria", "é"]}) == 3
    assert project(coll, {"$indexOfBytes": ["cafétéria", "r", 6]}) == 8
    assert project(coll, {"$indexOfBytes": [None, "a"]}) is None
    product = {"description": "Single LINE description."}
    assert project(coll, {"$regexFind": {"input": "$description", "regex": "line"}}, product) is None
    assert project(
        coll, {"$regexFind": {"input": "$description", "regex": "line", "options": "i"}}, product
    ) == {"match": "LINE", "idx": 7, "captures": []}
    assert project(
        coll, {"$regexFindAll": {"input": "a1 b22 c", "regex": "([a-z])(\\d+)?"}}
    ) == [
        {"match": "a1", "idx": 0, "captures": ["a", "1"]},
        {"match": "b22", "idx": 3, "captures": ["b", "22"]},
        {"match": "c", "idx": 7, "captures": ["c", None]},
    ]
    assert project(coll, {"$regexFindAll": {"input": "$none", "regex": "a"}}) == []
    item = {"item": "blue paint with blue paintbrush"}
    assert project(
        coll, {"$replaceOne": {"input": "$item", "find": "blue paint", "replacement": "red paint"}}, item
    ) == "red paint with blue paintbrush"
    assert project(
        coll, {"$replaceAll": {"input": "$item", "find": "blue paint", "replacement": "red paint"}}, item
    ) == "red paint with red paintbrush"
    assert error_code(coll, {"$replaceAll": {"input": "a", "find": 1, "replacement": "b"}}) == 51745


def test_trigonometry(coll):
    assert project(coll, {"$sin": 0}) == 0.0
    assert project(coll, {"$cos": 0}) == 1.0
    assert math.isclose(project(coll, {"$tan": math.pi / 4}), 1.0)
    assert math.isclose(project(coll, {"$asin": 1}), math.pi / 2)
    assert math.isclose(project(coll, {"$acos": 1}), 0.0)
    assert math.isclose(project(coll, {"$atan": 1}), math.pi / 4)
    assert math.isclose(project(coll, {"$atan2": [1, 1]}), math.pi / 4)
    assert math.isclose(project(coll, {"$sinh": 1}), math.sinh(1))
    assert math.isclose(project(coll, {"$cosh": 1}), math.cosh(1))
    assert math.isclose(project(coll, {"$tanh": 1}), math.tanh(1))
    assert math.isclose(project(coll, {"$asinh": 1}), math.asinh(1))
    assert math.isclose(project(coll, {"$acosh": 2}), math.acosh(2))
    assert math.isclose(project(coll, {"$atanh": 0.5}), math.atanh(0.5))
    assert project(coll, {"$radiansToDegrees": math.pi}) == 180.0
    assert project(coll, {"$degreesToRadians": 180}) == math.pi
    assert project(coll, {"$degreesToRadians": Decimal128("1")}) == Decimal128(
        "0.01745329251994329576923690768488613"
    )
    assert project(coll, {"$sin": None}) is None
    assert error_code(coll, {"$acos": 2}) == 50989
    assert error_code(coll, {"$sin": float("inf")}) == 50989
    assert error_code(coll, {"$sin": "x"}) == 28765


def test_bitwise(coll):
    switches = {"a": 0, "b": 127}
    assert project(coll, {"$bitAnd": ["$a", "$b"]}, switches) == 0
    assert project(coll, {"$bitOr": [3, 5]}) == 7
    assert project(coll, {"$bitXor": [3, 5]}) == 6
    assert project(coll, {"$bitNot": "$a"}, switches) == -1
    assert project(coll, {"$bitAnd": [1, None]}) is None
    assert error_code(coll, {"$bitAnd": [1, 1.5]}) == 14


def test_sizes_timestamps_iso_weeks_and_conversions(coll):
    doc = {
        "o": {"a": 1},
        "bin": Binary(b"\x01\x02\x03"),
        "ts": Timestamp(1622731060, 2),
        "d": datetime.datetime(2016, 1, 1),
    }
    assert project(coll, {"$bsonSize": "$o"}, doc) == 12
    assert project(coll, {"$bsonSize": "$$ROOT"}, {"a": 1}) == 21  # {a: 1, _id: 1}
    assert project(coll, {"$binarySize": "$bin"}, doc) == 3
    assert project(coll, {"$binarySize": "café"}) == 5
    assert error_code(coll, {"$bsonSize": 1}) == 31393
    assert project(coll, {"$tsSecond": "$ts"}, doc) == 1622731060
    assert project(coll, {"$tsIncrement": "$ts"}, doc) == 2
    year = project(coll, {"$isoWeekYear": "$d"}, doc)
    assert year == 2015 and isinstance(year, Int64)  # a long, as MongoDB's isoYear is
    assert project(coll, {"$isoWeek": "$d"}, doc) == 53
    assert project(coll, {"$isoWeek": datetime.datetime(2016, 1, 4)}) == 1
    assert project(coll, {"$toObjectId": "5ab9cbfa31c2ab715d42129e"}) == ObjectId(
        "5ab9cbfa31c2ab715d42129e"
    )
    assert error_code(coll, {"$toObjectId": "nope"}) == 241
    # The manual's $toHashedIndexKey example.
    assert project(coll, {"$toHashedIndexKey": "$val"}, {"val": "string to hash"}) == 763543691661428748


def test_rand_and_sample_rate(coll):
    coll.insert_many([{"_id": i} for i in range(200)])
    values = [d["r"] for d in coll.aggregate([{"$project": {"r": {"$rand": {}}}}])]
    assert len(values) == 200 and all(0.0 <= v < 1.0 for v in values)
    assert len(set(values)) > 150
    assert coll.count_documents({"$sampleRate": 0.0}) == 0
    assert coll.count_documents({"$sampleRate": 1.0}) == 200
    some = coll.count_documents({"$sampleRate": 0.5})
    assert 40 < some < 160
    with pytest.raises(OperationFailure) as err:
        coll.count_documents({"$sampleRate": 2})
    assert err.value.code == 2


def test_operators_in_a_find_expr(coll):
    coll.insert_many(
        [
            {"_id": 1, "flags": 6, "name": "pale ale", "tags": ["a", "b"]},
            {"_id": 2, "flags": 1, "name": "stout", "tags": ["c"]},
        ]
    )
    found = coll.find({"$expr": {"$eq": [{"$bitAnd": ["$flags", 2]}, 2]}})
    assert [d["_id"] for d in found] == [1]
    found = coll.find(
        {"$expr": {"$ne": [{"$regexFind": {"input": "$name", "regex": "ale$"}}, None]}}
    )
    assert [d["_id"] for d in found] == [1]
    found = coll.find({"$expr": {"$gt": [{"$size": {"$zip": {"inputs": ["$tags", "$tags"]}}}, 1]}})
    assert [d["_id"] for d in found] == [1]


def test_refused_names_answer_mongodb_errors(coll):
    assert error_code(coll, {"$meta": "textScore"}) == 40218
    assert error_code(coll, {"$meta": "bogus"}) == 17308
    assert error_code(coll, {"$function": {"body": "function() {}", "args": [], "lang": "js"}}) == 31264
    coll.insert_one({"_id": 2})
    with pytest.raises(OperationFailure) as err:
        list(
            coll.aggregate(
                [
                    {
                        "$group": {
                            "_id": None,
                            "x": {
                                "$accumulator": {
                                    "init": "function() {}",
                                    "accumulate": "function() {}",
                                    "accumulateArgs": [],
                                    "merge": "function() {}",
                                    "lang": "js",
                                }
                            },
                        }
                    }
                ]
            )
        )
    assert err.value.code == 31264
    assert error_code(coll, {"$noSuchOperator": 1}) == 168
