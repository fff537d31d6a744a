"""Value matching of MongoDB's unified test format ("Evaluating Matches").

Compares an expected value from a spec test with what pymongo returned or sent:
numbers by value across int/long/double, extra fields allowed in root-level documents
only, and the special operators $$exists, $$type, $$unsetOrMatches and $$lte.

Not for: comparing collection contents of `outcome` (those match exactly, see
`documents_equal`), or running operations (unified_ops.py).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping

from bson import Binary, Code, Decimal128, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.int64 import Int64


class Unset:
    """The value of a field that is absent (distinct from null)."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET = Unset()


class Mismatch(Exception):
    """The actual value does not match the expected one; the message says where and why."""


class UnsupportedOperator(Exception):
    """A special operator this runner does not implement (a runner gap, not a server failure)."""


def _is_number(v) -> bool:
    return isinstance(v, (int, float, Decimal128)) and not isinstance(v, bool)


def _type_matches(name: str, v) -> bool:
    if name == "double":
        return isinstance(v, float)
    if name == "string":
        return isinstance(v, str)
    if name == "object":
        return isinstance(v, Mapping)
    if name == "array":
        return isinstance(v, list)
    if name == "binData":
        return isinstance(v, (Binary, bytes))
    if name == "objectId":
        return isinstance(v, ObjectId)
    if name == "bool":
        return isinstance(v, bool)
    if name == "date":
        return isinstance(v, datetime.datetime)
    if name == "null":
        return v is None
    if name == "regex":
        return isinstance(v, (Regex, re.Pattern))
    if name == "javascript":
        return isinstance(v, Code)
    if name == "int":
        return isinstance(v, int) and not isinstance(v, (bool, Int64))
    if name == "long":
        return isinstance(v, Int64)
    if name == "timestamp":
        return isinstance(v, Timestamp)
    if name == "decimal":
        return isinstance(v, Decimal128)
    if name == "number":
        return _is_number(v)
    if name == "minKey":
        return isinstance(v, MinKey)
    if name == "maxKey":
        return isinstance(v, MaxKey)
    raise UnsupportedOperator(f"$$type {name!r}")


def _numbers_equal(a, b) -> bool:
    if isinstance(a, Decimal128) or isinstance(b, Decimal128):
        return isinstance(a, Decimal128) and isinstance(b, Decimal128) and a == b
    return a == b


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 200 else text[:200] + "..."


def _operator(expected) -> str | None:
    if isinstance(expected, Mapping) and len(expected) == 1:
        (key,) = expected.keys()
        if isinstance(key, str) and key.startswith("$$"):
            return key
    return None


def match(expected, actual, root: bool = True, path: str = "") -> None:
    """Raises Mismatch unless `actual` matches `expected` (`root`: extra fields allowed)."""
    op = _operator(expected)
    if op is not None:
        arg = expected[op]
        if op == "$$exists":
            if arg != (actual is not UNSET):
                raise Mismatch(f"{path or '<root>'}: want exists={arg}, got {_short(actual)}")
            return
        if op == "$$unsetOrMatches":
            if actual is UNSET:
                return
            match(arg, actual, root, path)
            return
        if op == "$$type":
            names = arg if isinstance(arg, list) else [arg]
            if actual is UNSET or not any(_type_matches(n, actual) for n in names):
                raise Mismatch(f"{path or '<root>'}: want type {names}, got {_short(actual)}")
            return
        if op == "$$lte":
            if not (_is_number(actual) and actual <= arg):
                raise Mismatch(f"{path or '<root>'}: want <= {arg}, got {_short(actual)}")
            return
        raise UnsupportedOperator(op)
    if actual is UNSET:
        raise Mismatch(f"{path or '<root>'}: want {_short(expected)}, field is absent")
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            raise Mismatch(f"{path or '<root>'}: want a document {_short(expected)}, got {_short(actual)}")
        for key, want in expected.items():
            match(want, actual.get(key, UNSET), False, f"{path}.{key}" if path else key)
        if not root:
            extra = [k for k in actual.keys() if k not in expected]
            if extra:
                raise Mismatch(f"{path or '<root>'}: unexpected fields {extra} in {_short(actual)}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list):
            raise Mismatch(f"{path or '<root>'}: want an array {_short(expected)}, got {_short(actual)}")
        if len(expected) != len(actual):
            raise Mismatch(
                f"{path or '<root>'}: want {len(expected)} elements {_short(expected)}, "
                f"got {len(actual)} {_short(actual)}"
            )
        for i, (want, got) in enumerate(zip(expected, actual)):
            match(want, got, False, f"{path}.{i}" if path else str(i))
        return
    if _is_number(expected):
        if not (_is_number(actual) and _numbers_equal(expected, actual)):
            raise Mismatch(f"{path or '<root>'}: want {_short(expected)}, got {_short(actual)}")
        return
    if isinstance(expected, bool) or expected is None:
        if actual is not expected and not (isinstance(actual, bool) and actual == expected):
            raise Mismatch(f"{path or '<root>'}: want {_short(expected)}, got {_short(actual)}")
        return
    if type(expected) is not type(actual) and not (
        isinstance(expected, (Binary, bytes)) and isinstance(actual, (Binary, bytes))
    ):
        raise Mismatch(f"{path or '<root>'}: want {_short(expected)}, got {_short(actual)}")
    if expected != actual:
        raise Mismatch(f"{path or '<root>'}: want {_short(expected)}, got {_short(actual)}")


def match_documents(expected: list, actual: list, path: str = "") -> None:
    """An iterated result (find, aggregate): same length, each element a root-level document."""
    if not isinstance(actual, list) or len(expected) != len(actual):
        raise Mismatch(f"{path or 'result'}: want {_short(expected)}, got {_short(actual)}")
    for i, (want, got) in enumerate(zip(expected, actual)):
        match(want, got, True, f"{path}[{i}]" if path else f"[{i}]")


def _normalized(v):
    if isinstance(v, Mapping):
        return ("doc", sorted((k, _normalized(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("arr", [_normalized(x) for x in v])
    if isinstance(v, bool):
        return ("bool", v)
    if _is_number(v) and not isinstance(v, Decimal128):
        return ("num", float(v))
    return (type(v).__name__, repr(v))


def documents_equal(expected: list, actual: list) -> str | None:
    """Collection contents for `outcome`: exact, key order ignored. Returns why not, or None."""
    if len(expected) != len(actual):
        return f"want {len(expected)} documents {_short(expected)}, got {len(actual)} {_short(actual)}"
    for i, (want, got) in enumerate(zip(expected, actual)):
        if _normalized(want) != _normalized(got):
            return f"document {i}: want {_short(want)}, got {_short(got)}"
    return None
