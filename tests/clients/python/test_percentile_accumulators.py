"""`$percentile` and `$median` as `$group` accumulators and `$setWindowFields` window functions
(method "approximate"), with the expected results of MongoDB's manual examples ("$percentile
(aggregation)", "$median (aggregation)": the `testScores` collection); and the computing window
functions over Decimal128 inputs, which MongoDB computes (and answers) in Decimal128.
"""

from __future__ import annotations

import pytest
from bson.decimal128 import Decimal128
from pymongo.errors import OperationFailure

SCORES = [
    {"studentId": "2345", "test01": 62, "test02": 81, "test03": 80},
    {"studentId": "2356", "test01": 60, "test02": 83, "test03": 79},
    {"studentId": "2358", "test01": 67, "test02": 82, "test03": 78},
    {"studentId": "2367", "test01": 64, "test02": 72, "test03": 77},
    {"studentId": "2369", "test01": 60, "test02": 53, "test03": 72},
]


@pytest.fixture
def scores(db):
    db.testScores.insert_many([dict(s) for s in SCORES])
    return db.testScores


def test_group_percentile_and_median(scores):
    result = list(
        scores.aggregate(
            [
                {
                    "$group": {
                        "_id": None,
                        "test01_percentiles": {
                            "$percentile": {"input": "$test01", "p": [0.5, 0.75, 0.9, 0.95], "method": "approximate"}
                        },
                        "test01_median": {"$median": {"input": "$test01", "method": "approximate"}},
                    }
                }
            ]
        )
    )
    assert result == [{"_id": None, "test01_percentiles": [62.0, 64.0, 67.0, 67.0], "test01_median": 62.0}]
    assert isinstance(result[0]["test01_median"], float)


def test_group_percentile_ignores_non_numbers_and_answers_null_without_any(db):
    db.m.insert_many(
        [
            {"g": 1, "v": 3},
            {"g": 1, "v": "x"},
            {"g": 1, "v": Decimal128("1.5")},
            {"g": 1},
            {"g": 2, "v": "only text"},
        ]
    )
    result = list(
        db.m.aggregate(
            [
                {
                    "$group": {
                        "_id": "$g",
                        "p": {"$percentile": {"input": "$v", "p": [0.1, 1], "method": "approximate"}},
                        "m": {"$median": {"input": "$v", "method": "approximate"}},
                    }
                },
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert result == [
        {"_id": 1, "p": [1.5, 3.0], "m": 1.5},
        {"_id": 2, "p": [None, None], "m": None},
    ]


def test_window_median_and_percentile(scores):
    median = list(
        scores.aggregate(
            [
                {
                    "$setWindowFields": {
                        "sortBy": {"test01": 1},
                        "output": {
                            "test01_median": {
                                "$median": {"input": "$test01", "method": "approximate"},
                                "window": {"range": [-3, 3]},
                            }
                        },
                    }
                },
                {"$project": {"_id": 0, "studentId": 1, "test01_median": 1}},
            ]
        )
    )
    assert median == [
        {"studentId": "2356", "test01_median": 60.0},
        {"studentId": "2369", "test01_median": 60.0},
        {"studentId": "2345", "test01_median": 60.0},
        {"studentId": "2367", "test01_median": 64.0},
        {"studentId": "2358", "test01_median": 64.0},
    ]
    percentile = list(
        scores.aggregate(
            [
                {
                    "$setWindowFields": {
                        "sortBy": {"test01": 1},
                        "output": {
                            "test01_95percentile": {
                                "$percentile": {"input": "$test01", "p": [0.95], "method": "approximate"},
                                "window": {"range": [-3, 3]},
                            }
                        },
                    }
                },
                {"$project": {"_id": 0, "studentId": 1, "test01_95percentile": 1}},
            ]
        )
    )
    assert percentile == [
        {"studentId": "2356", "test01_95percentile": [62.0]},
        {"studentId": "2369", "test01_95percentile": [62.0]},
        {"studentId": "2345", "test01_95percentile": [64.0]},
        {"studentId": "2367", "test01_95percentile": [67.0]},
        {"studentId": "2358", "test01_95percentile": [67.0]},
    ]


def test_percentile_accumulator_errors(scores):
    def code(spec):
        with pytest.raises(OperationFailure) as raised:
            list(scores.aggregate([{"$group": {"_id": None, "x": spec}}]))
        return raised.value.code

    assert code({"$percentile": {"input": "$test01", "p": [0.5], "method": "continuous"}}) == 2
    assert code({"$percentile": {"input": "$test01", "p": [1.5], "method": "approximate"}}) != 0
    assert code({"$median": {"input": "$test01"}}) == 40414
    assert code({"$median": {"input": "$test01", "method": "approximate", "p": [0.5]}}) == 40415
    assert code({"$percentile": 5}) == 7436200


def test_window_functions_compute_decimal_inputs_in_decimal(db):
    db.d.insert_many(
        [
            {"x": 0, "v": Decimal128("0.1")},
            {"x": 1, "v": Decimal128("0.2")},
            {"x": 2, "v": None},
            {"x": 3, "v": Decimal128("0.4")},
        ]
    )
    out = list(
        db.d.aggregate(
            [
                {
                    "$setWindowFields": {
                        "sortBy": {"x": 1},
                        "output": {
                            "d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}},
                            "i": {"$integral": {"input": "$v"}, "window": {"documents": ["unbounded", "current"]}},
                            "ema": {"$expMovingAvg": {"input": "$v", "alpha": 0.5}},
                            "fill": {"$linearFill": "$v"},
                            "cov": {"$covariancePop": ["$x", "$v"], "window": {"documents": [0, 1]}},
                        },
                    }
                },
                {"$project": {"_id": 0, "v": 0}},
            ]
        )
    )
    assert out[1]["d"] == Decimal128("0.1")
    assert out[1]["i"].to_decimal() == Decimal128("0.15").to_decimal()
    assert out[1]["ema"].to_decimal() == Decimal128("0.15").to_decimal()
    assert out[2]["fill"].to_decimal() == Decimal128("0.3").to_decimal()
    assert out[0]["cov"].to_decimal() == Decimal128("0.025").to_decimal()
    assert all(isinstance(row["d"], (Decimal128, type(None))) for row in out)
