"""Checks of unified_match.py against the examples of the unified test format's
"Evaluating Matches" section (root-level extra fields, numbers, $$ operators).

Not for: running spec files (crud_unified.py does that against a server).
Run: /work/pyv/bin/python -m pytest -q tests/spec/test_unified_match.py
"""

import pytest
from bson.int64 import Int64

from unified_match import UNSET, Mismatch, documents_equal, match, match_documents


def test_root_document_may_have_extra_fields_nested_may_not():
    match({"x": 1}, {"x": 1, "y": 1})
    with pytest.raises(Mismatch):
        match({"x": 1, "y": 1}, {"x": 1})
    with pytest.raises(Mismatch):
        match({"x": {"y": 1}}, {"x": {"y": 1, "z": 1}})


def test_iterated_results_are_root_documents_but_distinct_values_are_not():
    match_documents([{"x": 1}, {"x": 2}], [{"x": 1, "y": 1}, {"x": 2, "y": 2}])
    with pytest.raises(Mismatch):
        match([{"x": 1}, {"x": 2}], [{"x": 1, "y": 1}, {"x": 2, "y": 2}])


def test_numbers_match_by_value_but_not_booleans():
    match(1, 1.0)
    match(1, Int64(1))
    with pytest.raises(Mismatch):
        match(1, 1.5)
    with pytest.raises(Mismatch):
        match(1, True)
    with pytest.raises(Mismatch):
        match(False, 0)


def test_special_operators():
    match({"a": {"$$exists": False}}, {"b": 1})
    with pytest.raises(Mismatch):
        match({"a": {"$$exists": False}}, {"a": 1})
    match({"a": {"$$unsetOrMatches": 1}}, {})
    with pytest.raises(Mismatch):
        match({"a": {"$$unsetOrMatches": 1}}, {"a": 2})
    match({"$$unsetOrMatches": {"n": 1}}, UNSET)
    match({"n": {"$$type": ["int", "long"]}}, {"n": Int64(3)})
    with pytest.raises(Mismatch):
        match({"n": {"$$type": "long"}}, {"n": 3})


def test_outcome_documents_match_exactly_in_any_key_order():
    assert documents_equal([{"_id": 1, "x": 1}], [{"x": 1.0, "_id": 1}]) is None
    assert documents_equal([{"_id": 1}], [{"_id": 1, "x": 1}]) is not None
