"""Command-level `let` through pymongo: variables in `find`, `aggregate`, `update`, `delete`,
`findAndModify` and `explain`, an update statement's constants `c`, and the errors for bad
variable names.

The collections and expected results follow the MongoDB manual's `let` examples
(`cakeFlavors`, `cakeSales`); a `let` that is ignored would return nothing or change
nothing, which every test here would notice.
"""

from __future__ import annotations

import pytest
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

FLAVOR_IS = {"$expr": {"$eq": ["$flavor", "$$targetFlavor"]}}


@pytest.fixture
def cakes(db):
    c = db["cakeFlavors"]
    c.insert_many(
        [
            {"_id": 1, "flavor": "chocolate"},
            {"_id": 2, "flavor": "strawberry"},
            {"_id": 3, "flavor": "cherry"},
        ]
    )
    return c


def flavors(coll):
    return [d["flavor"] for d in coll.find({}, sort=[("_id", 1)])]


def test_find_filter_and_projection_see_the_variables(cakes):
    found = list(cakes.find(FLAVOR_IS, {"_id": 0}, let={"targetFlavor": "chocolate"}))
    assert found == [{"flavor": "chocolate"}]
    # The projection sees them too.
    found = list(
        cakes.find(
            {"_id": 2},
            {"_id": 0, "label": {"$concat": ["$$prefix", "$flavor"]}},
            let={"prefix": "best "},
        )
    )
    assert found == [{"label": "best strawberry"}]


def test_find_variables_are_expressions_evaluated_once(cakes):
    found = list(cakes.find({"$expr": {"$lt": ["$_id", "$$limit"]}}, let={"limit": {"$add": [1, 2]}}))
    assert [d["_id"] for d in found] == [1, 2]
    # A "$$" string outside $expr is a plain value to match, not a variable.
    cakes.insert_one({"_id": 4, "flavor": "$$targetFlavor"})
    found = list(cakes.find({"flavor": "$$targetFlavor"}, let={"targetFlavor": "chocolate"}))
    assert [d["_id"] for d in found] == [4]


def test_count_documents_is_an_aggregate_with_the_filter(cakes):
    # count_documents runs an aggregate; a $match with $expr and let.
    n = list(
        cakes.aggregate(
            [{"$match": FLAVOR_IS}, {"$count": "n"}],
            let={"targetFlavor": "cherry"},
        )
    )
    assert n == [{"n": 1}]


def test_aggregate_match_project_and_lookup_see_the_variables(db):
    sales = db["cakeSales"]
    sales.insert_many(
        [
            {"_id": 1, "flavor": "chocolate", "salesTotal": 1580},
            {"_id": 2, "flavor": "strawberry", "salesTotal": 4350},
            {"_id": 3, "flavor": "cherry", "salesTotal": 2150},
        ]
    )
    out = list(
        sales.aggregate(
            [
                {"$match": {"$expr": {"$gt": ["$salesTotal", "$$targetTotal"]}}},
                {"$project": {"_id": 0, "flavor": 1, "over": {"$subtract": ["$salesTotal", "$$targetTotal"]}}},
                {"$sort": {"flavor": 1}},
            ],
            let={"targetTotal": 2000},
        )
    )
    assert out == [{"flavor": "cherry", "over": 150}, {"flavor": "strawberry", "over": 2350}]

    db["targets"].insert_many([{"_id": "a", "minimum": 2000}, {"_id": "b", "minimum": 4000}])
    # A $lookup sub-pipeline sees the command's variables beside its own.
    out = list(
        db["targets"].aggregate(
            [
                {
                    "$lookup": {
                        "from": "cakeSales",
                        "let": {"minimum": "$minimum"},
                        "pipeline": [
                            {"$match": {"$expr": {"$and": [
                                {"$gt": ["$salesTotal", "$$minimum"]},
                                {"$ne": ["$flavor", "$$excluded"]},
                            ]}}},
                            {"$project": {"_id": 0, "flavor": 1}},
                            {"$sort": {"flavor": 1}},
                        ],
                        "as": "above",
                    }
                },
                {"$sort": {"_id": 1}},
            ],
            let={"excluded": "cherry"},
        )
    )
    assert out == [
        {"_id": "a", "minimum": 2000, "above": [{"flavor": "strawberry"}]},
        {"_id": "b", "minimum": 4000, "above": [{"flavor": "strawberry"}]},
    ]


def test_inner_variables_shadow_the_commands(cakes):
    found = list(
        cakes.find(
            {"$expr": {"$let": {"vars": {"targetFlavor": "cherry"}, "in": {"$eq": ["$flavor", "$$targetFlavor"]}}}},
            let={"targetFlavor": "chocolate"},
        )
    )
    assert [d["_id"] for d in found] == [3]


def test_update_one_with_let_in_filter_and_pipeline(cakes):
    result = cakes.update_one(
        FLAVOR_IS,
        [{"$set": {"flavor": "$$newFlavor"}}],
        let={"targetFlavor": "cherry", "newFlavor": "orange"},
    )
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert flavors(cakes) == ["chocolate", "strawberry", "orange"]


def test_update_many_with_let(cakes):
    result = cakes.update_many(
        {"$expr": {"$gt": ["$_id", "$$from"]}},
        {"$set": {"late": True}},
        let={"from": 1},
    )
    assert result.modified_count == 2
    assert sorted(d["_id"] for d in cakes.find({"late": True})) == [2, 3]


def test_update_statement_constants(db, cakes):
    reply = db.command(
        {
            "update": "cakeFlavors",
            "updates": [{"q": {"_id": 1}, "u": [{"$set": {"flavor": "$$c1"}}], "c": {"c1": "mocha"}}],
        }
    )
    assert reply["nModified"] == 1
    assert flavors(cakes)[0] == "mocha"
    # Constants belong to pipeline updates only: MongoDB's 51198, nothing written.
    reply = db.command(
        {
            "update": "cakeFlavors",
            "updates": [{"q": {"_id": 2}, "u": {"$set": {"flavor": "x"}}, "c": {"c1": 1}}],
        }
    )
    assert reply["n"] == 0
    assert reply["writeErrors"][0]["code"] == 51198
    assert flavors(cakes)[1] == "strawberry"


def test_delete_with_let(cakes):
    result = cakes.delete_one(FLAVOR_IS, let={"targetFlavor": "strawberry"})
    assert result.deleted_count == 1
    assert flavors(cakes) == ["chocolate", "cherry"]
    result = cakes.delete_many({"$expr": {"$in": ["$flavor", "$$gone"]}}, let={"gone": ["chocolate", "cherry"]})
    assert result.deleted_count == 2
    assert cakes.count_documents({}) == 0


def test_find_one_and_update_and_delete_with_let(cakes):
    doc = cakes.find_one_and_update(
        FLAVOR_IS,
        [{"$set": {"flavor": {"$concat": ["$flavor", "$$suffix"]}}}],
        let={"targetFlavor": "chocolate", "suffix": " chip"},
        return_document=ReturnDocument.AFTER,
    )
    assert doc == {"_id": 1, "flavor": "chocolate chip"}
    doc = cakes.find_one_and_delete(FLAVOR_IS, let={"targetFlavor": "cherry"})
    assert doc == {"_id": 3, "flavor": "cherry"}
    assert flavors(cakes) == ["chocolate chip", "strawberry"]


def test_explain_with_let(db, cakes):
    reply = db.command(
        {"explain": {"find": "cakeFlavors", "filter": FLAVOR_IS, "let": {"targetFlavor": "cherry"}}, "verbosity": "executionStats"}
    )
    assert reply["executionStats"]["nReturned"] == 1


def test_now_in_let(cakes):
    found = list(cakes.find({"$expr": {"$lt": ["$_id", {"$year": "$$today"}]}}, let={"today": "$$NOW"}))
    assert len(found) == 3


@pytest.mark.parametrize(
    "variables, code",
    [
        ({"Upper": 1}, 16867),
        ({"_under": 1}, 16867),
        ({"a-b": 1}, 16868),
    ],
)
def test_bad_variable_names_are_refused(cakes, variables, code):
    with pytest.raises(OperationFailure) as failure:
        list(cakes.find(FLAVOR_IS, let=variables))
    assert failure.value.code == code


def test_a_variable_that_needs_a_document_is_refused(cakes):
    for variables in ({"targetFlavor": "$flavor"}, {"targetFlavor": {"$concat": ["$$ROOT.flavor", "x"]}}):
        with pytest.raises(OperationFailure) as failure:
            list(cakes.find(FLAVOR_IS, let=variables))
        assert failure.value.code == 4890500


def test_an_undefined_variable_is_an_error_not_a_silent_miss(cakes):
    with pytest.raises(OperationFailure) as failure:
        list(cakes.find({"$expr": {"$eq": ["$flavor", "$$nobody"]}}, let={"targetFlavor": 1}))
    assert failure.value.code == 17276


def test_let_of_the_wrong_type_is_refused(db, cakes):
    with pytest.raises(OperationFailure) as failure:
        db.command({"find": "cakeFlavors", "filter": {}, "let": 5})
    assert failure.value.code == 14
    with pytest.raises(OperationFailure) as failure:
        cakes.delete_one(FLAVOR_IS, let={"targetFlavor": "$flavor"})
    assert failure.value.code == 4890500
    assert cakes.count_documents({}) == 3
