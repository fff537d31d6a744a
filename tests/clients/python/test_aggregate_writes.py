"""Aggregations that write ($out, $merge) and collection-less aggregations
(aggregate: 1 with $documents and $listLocalSessions), as a pymongo user sees them.

Expected results are the MongoDB manual's examples for $out and $merge where it
has them; errors carry MongoDB 7.0's codes. On docgate a $merge runs in one
transaction: a merge that fails leaves the target as it was (MongoDB keeps what
it wrote before the failure).
"""

from __future__ import annotations

import datetime
import threading

import pytest
from bson import Binary
from pymongo.errors import OperationFailure

BOOKS = [
    {"_id": 8751, "title": "The Banquet", "author": "Dante", "copies": 2},
    {"_id": 8752, "title": "Divine Comedy", "author": "Dante", "copies": 1},
    {"_id": 8645, "title": "Eclogues", "author": "Dante", "copies": 2},
    {"_id": 7000, "title": "The Odyssey", "author": "Homer", "copies": 10},
    {"_id": 7020, "title": "Iliad", "author": "Homer", "copies": 10},
]

SALARIES = [
    {"_id": 1, "employee": "Ant", "dept": "A", "salary": 100000, "fiscal_year": 2017},
    {"_id": 2, "employee": "Bee", "dept": "A", "salary": 120000, "fiscal_year": 2017},
    {"_id": 3, "employee": "Cat", "dept": "Z", "salary": 115000, "fiscal_year": 2017},
    {"_id": 4, "employee": "Ant", "dept": "A", "salary": 115000, "fiscal_year": 2018},
    {"_id": 5, "employee": "Bee", "dept": "Z", "salary": 145000, "fiscal_year": 2018},
    {"_id": 6, "employee": "Cat", "dept": "Z", "salary": 135000, "fiscal_year": 2018},
    {"_id": 7, "employee": "Gecko", "dept": "A", "salary": 100000, "fiscal_year": 2018},
    {"_id": 8, "employee": "Ant", "dept": "A", "salary": 125000, "fiscal_year": 2019},
    {"_id": 9, "employee": "Bee", "dept": "Z", "salary": 160000, "fiscal_year": 2019},
    {"_id": 10, "employee": "Cat", "dept": "Z", "salary": 150000, "fiscal_year": 2019},
]

BUDGETS_BY_YEAR_AND_DEPT = [
    {"_id": {"fiscal_year": 2017, "dept": "A"}, "salaries": 220000},
    {"_id": {"fiscal_year": 2017, "dept": "Z"}, "salaries": 115000},
    {"_id": {"fiscal_year": 2018, "dept": "A"}, "salaries": 215000},
    {"_id": {"fiscal_year": 2018, "dept": "Z"}, "salaries": 280000},
    {"_id": {"fiscal_year": 2019, "dept": "A"}, "salaries": 125000},
    {"_id": {"fiscal_year": 2019, "dept": "Z"}, "salaries": 310000},
]


@pytest.fixture(autouse=True)
def _fresh_databases(client, db):
    """The test's databases start empty, whatever an earlier run on the same storage left."""
    for name in (db.name, db.name + "_rep"):
        client.drop_database(name)
    yield


def by_id(coll):
    return sorted(coll.find(), key=lambda d: repr(d["_id"]))


def sorted_by_id(docs):
    return sorted(docs, key=lambda d: repr(d["_id"]))


def failure(fn) -> OperationFailure:
    with pytest.raises(OperationFailure) as err:
        fn()
    return err.value


# ------------------------------------------------------------------ $out


def test_out_writes_the_manuals_authors_and_answers_an_empty_cursor(db):
    db.books.insert_many(BOOKS)
    result = list(
        db.books.aggregate(
            [{"$sort": {"_id": 1}}, {"$group": {"_id": "$author", "books": {"$push": "$title"}}}, {"$out": "authors"}]
        )
    )
    assert result == []
    authors = {d["_id"]: sorted(d["books"]) for d in db.authors.find()}
    assert authors == {
        "Homer": ["Iliad", "The Odyssey"],
        "Dante": ["Divine Comedy", "Eclogues", "The Banquet"],
    }


def test_out_into_another_database(client, db):
    db.books.insert_many(BOOKS)
    other = client[db.name + "_rep"]
    other.drop_collection("authors")
    db.books.aggregate(
        [{"$group": {"_id": "$author", "n": {"$sum": 1}}}, {"$out": {"db": other.name, "coll": "authors"}}]
    )
    assert by_id(other.authors) == [{"_id": "Dante", "n": 3}, {"_id": "Homer", "n": 2}]
    client.drop_database(other.name)


def test_out_replaces_the_target_and_keeps_its_indexes(db):
    db.books.insert_many(BOOKS)
    db.authors.insert_many([{"_id": "old", "n": 0}, {"_id": "older", "n": -1}])
    db.authors.create_index("n", name="n_1")
    db.books.aggregate([{"$group": {"_id": "$author", "n": {"$sum": "$copies"}}}, {"$out": "authors"}])
    assert by_id(db.authors) == [{"_id": "Dante", "n": 5}, {"_id": "Homer", "n": 20}]
    assert "n_1" in db.authors.index_information()
    assert db.authors.find_one({"n": 20}) == {"_id": "Homer", "n": 20}


def test_out_onto_the_collection_being_read(db):
    db.items.insert_many([{"_id": i, "v": i} for i in range(10)])
    db.items.aggregate([{"$match": {"v": {"$gte": 5}}}, {"$set": {"v": {"$multiply": ["$v", 10]}}}, {"$out": "items"}])
    assert by_id(db.items) == [{"_id": i, "v": i * 10} for i in range(5, 10)]


def test_out_with_a_duplicate_id_fails_and_keeps_the_old_content(db):
    db.src.insert_many([{"_id": 1, "k": "x"}, {"_id": 2, "k": "x"}])
    db.target.insert_one({"_id": "kept"})
    err = failure(lambda: db.src.aggregate([{"$project": {"_id": "$k"}}, {"$out": "target"}]))
    assert err.code == 11000, err.details
    assert list(db.target.find()) == [{"_id": "kept"}]


def test_out_that_breaks_a_kept_unique_index_fails_and_keeps_the_old_content(db):
    db.target.insert_many([{"_id": 1, "k": "a"}, {"_id": 2, "k": "b"}])
    db.target.create_index("k", unique=True, name="k_1")
    db.src.insert_many([{"_id": 10, "k": "x"}, {"_id": 11, "k": "x"}])
    err = failure(lambda: db.src.aggregate([{"$out": "target"}]))
    assert err.code == 11000, err.details
    assert "k_1" in err.details["errmsg"], err.details
    assert by_id(db.target) == [{"_id": 1, "k": "a"}, {"_id": 2, "k": "b"}]
    assert db.target.index_information()["k_1"]["unique"] is True


def test_out_is_atomic_for_a_reader_in_a_loop(client, db):
    """Every read of the target sees the whole old or the whole new content, never a mix.

    A batch of more than 128 documents is read in several store statements, and batches of
    150 go through getMore: a cursor whose collection is replaced between two of its reads
    ends with 175 QueryPlanKilled (a first batch is read again from the new collection)."""
    content_a = [{"_id": i, "v": "a"} for i in range(600)]
    content_b = [{"_id": i, "v": "b"} for i in range(400)]
    db.a.insert_many(content_a)
    db.b.insert_many(content_b)
    db.a.aggregate([{"$out": "target"}])
    seen: list[tuple[int, frozenset]] = []
    errors: list[BaseException] = []
    killed: list[int] = []
    stop = threading.Event()

    def reader():
        try:
            target = client[db.name].target
            while not stop.is_set() and len(seen) < 2000:
                try:
                    docs = list(target.find({}, batch_size=1000 if len(seen) % 2 else 150))
                except OperationFailure as e:
                    # A read whose collection was replaced under it ends, as in MongoDB.
                    killed.append(e.code)
                    continue
                seen.append((len(docs), frozenset(d["v"] for d in docs)))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for round_ in range(40):
            source = db.b if round_ % 2 == 0 else db.a
            source.aggregate([{"$out": "target"}])
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors
    assert seen, "the reader read nothing"
    for count, values in seen:
        assert (count, values) in {(600, frozenset("a")), (400, frozenset("b"))}, (count, values)
    assert set(killed) <= {175}, killed
    assert {count for count, _ in seen} == {600, 400}, "the reader never saw one of the contents"


def test_concurrent_outs_to_one_target_all_succeed_and_the_last_wins(client, db):
    db.a.insert_many([{"_id": i, "v": "a"} for i in range(50)])
    db.b.insert_many([{"_id": i, "v": "b"} for i in range(30)])
    db.target.create_index("v", name="v_1")
    errors: list[BaseException] = []

    def worker(source):
        try:
            for _ in range(10):
                client[db.name][source].aggregate([{"$out": "target"}])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(source,)) for source in ("a", "b", "a")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    docs = list(db.target.find())
    assert {(len(docs), frozenset(d["v"] for d in docs))} <= {(50, frozenset("a")), (30, frozenset("b"))}
    assert "v_1" in db.target.index_information()
    assert [n for n in db.list_collection_names() if n.startswith("tmp.")] == []


def test_out_ends_cursors_open_on_the_replaced_collection(db):
    db.target.insert_many([{"_id": i} for i in range(10)])
    cursor = db.target.find({}, batch_size=2)
    assert next(cursor) == {"_id": 0}
    db.aggregate([{"$documents": [{"_id": "new"}]}, {"$out": "target"}])
    err = failure(lambda: list(cursor))
    assert err.code == 175, err.details
    assert list(db.target.find()) == [{"_id": "new"}]


def test_out_errors(client, db):
    db.items.insert_one({"_id": 1})
    err = failure(lambda: db.items.aggregate([{"$out": "x"}, {"$match": {}}]))
    assert err.code == 40601, err.details
    err = failure(lambda: db.items.aggregate([{"$facet": {"f": [{"$out": "x"}]}}]))
    assert err.code == 40600, err.details
    err = failure(lambda: db.items.aggregate([{"$lookup": {"from": "y", "pipeline": [{"$out": "x"}], "as": "z"}}]))
    assert err.code == 51047, err.details
    err = failure(lambda: db.items.aggregate([{"$out": "system.things"}]))
    assert err.code == 17385, err.details
    err = failure(lambda: db.items.aggregate([{"$out": 5}]))
    assert err.code == 16990, err.details
    err = failure(lambda: db.items.aggregate([{"$out": {"db": db.name}}]))
    assert err.code == 40414, err.details
    assert "x" not in db.list_collection_names()


def test_out_and_merge_are_refused_in_a_transaction(client, db):
    db.items.insert_one({"_id": 1})
    for stage in ({"$out": "x"}, {"$merge": "x"}):
        with client.start_session() as session:
            session.start_transaction()
            err = failure(lambda: list(db.items.aggregate([stage], session=session)))
            assert err.code == 263, err.details
            assert err.details["codeName"] == "OperationNotSupportedInTransaction"
            session.abort_transaction()
    assert "x" not in db.list_collection_names()
    # Nor with a snapshot read concern outside a transaction.
    command = {"aggregate": "items", "pipeline": [{"$out": "x"}], "cursor": {}, "readConcern": {"level": "snapshot"}}
    err = failure(lambda: db.command(command))
    assert err.code == 72, err.details
    assert "x" not in db.list_collection_names()


def test_explain_of_an_out_pipeline_writes_nothing(db):
    db.items.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    plan = db.command("explain", {"aggregate": "items", "pipeline": [{"$match": {"a": 1}}, {"$out": "x"}], "cursor": {}})
    assert plan["queryPlanner"]["namespace"] == f"{db.name}.items"
    assert "x" not in db.list_collection_names()


# ------------------------------------------------------------------ $merge


def test_merge_the_manuals_budgets_on_demand_view(client, db):
    db.salaries.insert_many(SALARIES)
    reporting = client[db.name + "_rep"]
    reporting.drop_collection("budgets")
    pipeline = [
        {"$group": {"_id": {"fiscal_year": "$fiscal_year", "dept": "$dept"}, "salaries": {"$sum": "$salary"}}},
        {
            "$merge": {
                "into": {"db": reporting.name, "coll": "budgets"},
                "on": "_id",
                "whenMatched": "replace",
                "whenNotMatched": "insert",
            }
        },
    ]
    assert list(db.salaries.aggregate(pipeline)) == []
    assert sorted_by_id(reporting.budgets.find()) == sorted_by_id(BUDGETS_BY_YEAR_AND_DEPT)
    # New 2019 salaries: re-running for 2019 replaces those two documents only.
    db.salaries.insert_many(
        [
            {"_id": 11, "employee": "Wren", "dept": "Z", "salary": 100000, "fiscal_year": 2019},
            {"_id": 12, "employee": "Zebra", "dept": "A", "salary": 150000, "fiscal_year": 2019},
        ]
    )
    db.salaries.aggregate([{"$match": {"fiscal_year": 2019}}, *pipeline])
    budgets = {(d["_id"]["fiscal_year"], d["_id"]["dept"]): d["salaries"] for d in reporting.budgets.find()}
    assert budgets[(2019, "A")] == 275000
    assert budgets[(2019, "Z")] == 410000
    assert budgets[(2018, "Z")] == 280000
    client.drop_database(reporting.name)


def test_merge_only_new_data_with_when_matched_fail(db):
    """The manual's orgArchive: `on` fields with a unique index; a second run fails."""
    db.salaries.insert_many(SALARIES)
    db.orgArchive.create_index([("dept", 1), ("fiscal_year", 1)], unique=True)
    pipeline = [
        {"$match": {"fiscal_year": 2019}},
        {"$group": {"_id": {"fiscal_year": "$fiscal_year", "dept": "$dept"}, "employees": {"$push": "$employee"}}},
        {"$project": {"_id": 0, "dept": "$_id.dept", "fiscal_year": "$_id.fiscal_year", "employees": 1}},
        {"$merge": {"into": "orgArchive", "on": ["dept", "fiscal_year"], "whenMatched": "fail"}},
    ]
    db.salaries.aggregate(pipeline)
    archive = sorted((d["dept"], d["fiscal_year"], d["employees"]) for d in db.orgArchive.find())
    assert archive == [("A", 2019, ["Ant"]), ("Z", 2019, ["Bee", "Cat"])]
    err = failure(lambda: db.salaries.aggregate(pipeline))
    assert err.code == 11000, err.details
    assert db.orgArchive.count_documents({}) == 2


def test_merge_with_a_pipeline_the_manuals_monthly_totals(db):
    db.votes.insert_many(
        [
            {"date": datetime.datetime(2019, 5, 6), "thumbsup": 13, "thumbsdown": 16},
            {"date": datetime.datetime(2019, 5, 7), "thumbsup": 14, "thumbsdown": 10},
        ]
    )
    db.monthlytotals.insert_one({"_id": "2019-05", "thumbsup": 26, "thumbsdown": 31})
    db.votes.aggregate(
        [
            {"$match": {"date": {"$gte": datetime.datetime(2019, 5, 7), "$lt": datetime.datetime(2019, 5, 8)}}},
            {"$project": {"_id": {"$dateToString": {"format": "%Y-%m", "date": "$date"}}, "thumbsup": 1, "thumbsdown": 1}},
            {
                "$merge": {
                    "into": "monthlytotals",
                    "on": "_id",
                    "whenMatched": [
                        {
                            "$addFields": {
                                "thumbsup": {"$add": ["$thumbsup", "$$new.thumbsup"]},
                                "thumbsdown": {"$add": ["$thumbsdown", "$$new.thumbsdown"]},
                            }
                        }
                    ],
                    "whenNotMatched": "insert",
                }
            },
        ]
    )
    assert list(db.monthlytotals.find()) == [{"_id": "2019-05", "thumbsup": 40, "thumbsdown": 41}]


def test_merge_let_variables_the_manuals_cake_sales(db):
    db.cakeSales.insert_one({"_id": 1, "flavor": "chocolate", "salesTotal": 1580, "salesTrend": "up"})
    db.command(
        {
            "aggregate": "cakeSales",
            "pipeline": [
                {
                    "$merge": {
                        "into": "cakeSales",
                        "let": {"year": "2020"},
                        "whenMatched": [{"$addFields": {"salesYear": "$$year"}}],
                    }
                }
            ],
            "cursor": {},
        }
    )
    assert list(db.cakeSales.find()) == [
        {"_id": 1, "flavor": "chocolate", "salesTotal": 1580, "salesTrend": "up", "salesYear": "2020"}
    ]


def test_merge_let_variables_are_evaluated_against_each_result(db):
    db.src.insert_many([{"_id": 1, "n": 5}, {"_id": 2, "n": 7}])
    db.dst.insert_many([{"_id": 1, "total": 100}, {"_id": 2, "total": 200}])
    db.src.aggregate(
        [
            {
                "$merge": {
                    "into": "dst",
                    "let": {"add": "$n"},
                    "whenMatched": [{"$set": {"total": {"$add": ["$total", "$$add"]}}}],
                    "whenNotMatched": "discard",
                }
            }
        ]
    )
    assert by_id(db.dst) == [{"_id": 1, "total": 105}, {"_id": 2, "total": 207}]


TARGET = [{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2}]
RESULTS = [{"_id": 1, "a": 10, "c": 10}, {"_id": 3, "a": 30}]
MATCHED = {
    "replace": {"_id": 1, "a": 10, "c": 10},
    "keepExisting": {"_id": 1, "a": 1, "b": 1},
    "merge": {"_id": 1, "a": 10, "b": 1, "c": 10},
    "pipeline": {"_id": 1, "a": 11, "b": 1},
}
UNSUPPORTED_PAIRS = {("keepExisting", "discard"), ("keepExisting", "fail"), ("fail", "discard"), ("fail", "fail")}


@pytest.mark.parametrize("when_not_matched", ["insert", "discard", "fail"])
@pytest.mark.parametrize("when_matched", ["replace", "keepExisting", "merge", "fail", "pipeline"])
def test_merge_mode_pairs(db, when_matched, when_not_matched):
    db.src.insert_many(RESULTS)
    db.dst.insert_many(TARGET)
    mode = [{"$set": {"a": {"$add": ["$a", "$$new.a"]}}}] if when_matched == "pipeline" else when_matched
    run = lambda: db.src.aggregate(  # noqa: E731
        [{"$sort": {"_id": 1}}, {"$merge": {"into": "dst", "whenMatched": mode, "whenNotMatched": when_not_matched}}]
    )
    if (when_matched, when_not_matched) in UNSUPPORTED_PAIRS:
        assert failure(run).code == 51181
        assert by_id(db.dst) == TARGET
        return
    if when_matched == "fail":
        assert failure(run).code == 11000
        assert by_id(db.dst) == TARGET  # one transaction: nothing of the merge stays
        return
    if when_not_matched == "fail":
        err = failure(run)
        assert err.code == 13113, err.details
        assert err.details["codeName"] == "MergeStageNoMatchingDocument"
        assert by_id(db.dst) == TARGET
        return
    run()
    expected = [MATCHED[when_matched], {"_id": 2, "a": 2}]
    if when_not_matched == "insert":
        expected.append({"_id": 3, "a": 30})
    assert by_id(db.dst) == expected


def test_merge_sees_what_earlier_results_wrote(db):
    db.aggregate(
        [
            {"$documents": [{"_id": 1, "a": 1}, {"_id": 1, "b": 2}, {"_id": 2, "a": 3}, {"_id": 2, "a": 4}]},
            {"$merge": {"into": "dst", "whenMatched": "merge"}},
        ]
    )
    assert by_id(db.dst) == [{"_id": 1, "a": 1, "b": 2}, {"_id": 2, "a": 4}]


def test_merge_of_many_documents_in_chunks(db):
    db.dst.insert_many([{"_id": i, "old": True} for i in range(0, 3000, 2)])
    db.src.insert_many([{"_id": i, "n": i} for i in range(3000)])
    db.src.aggregate([{"$merge": {"into": "dst", "whenMatched": "merge", "whenNotMatched": "insert"}}])
    docs = by_id(db.dst)
    assert len(docs) == 3000
    assert all(d["n"] == d["_id"] for d in docs)
    assert sum(1 for d in docs if d.get("old")) == 1500
    # On other fields through their unique index.
    db.dst.create_index("n", unique=True)
    db.src.aggregate([{"$project": {"_id": 0, "n": 1, "tag": "x"}}, {"$merge": {"into": "dst", "on": "n", "whenNotMatched": "fail"}}])
    assert db.dst.count_documents({"tag": "x"}) == 3000


def test_merge_creates_a_missing_target_and_adds_missing_ids(db):
    db.src.insert_many([{"_id": 1, "k": "x"}, {"_id": 2, "k": "y"}])
    db.src.aggregate([{"$project": {"_id": 0, "k": 1}}, {"$merge": "fresh"}])
    docs = list(db.fresh.find())
    assert sorted(d["k"] for d in docs) == ["x", "y"]
    assert all("_id" in d for d in docs)


def test_merge_errors(db):
    db.src.insert_many([{"_id": 1, "k": "x"}, {"_id": 2}])
    db.dst.insert_one({"_id": 1, "k": "x"})
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "on": "k"}}]))
    assert err.code == 51183, err.details
    db.dst.create_index("k", unique=True)
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "on": "k"}}]))
    assert err.code == 51132, err.details  # the second result has no `k`
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "let": {"v": 1}, "whenMatched": "replace"}}]))
    assert err.code == 51199, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "on": []}}]))
    assert err.code == 51187, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "on": 5}}]))
    assert err.code == 51186, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "whenMatched": "upsert"}}]))
    assert err.code == 2, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": "dst", "bogus": 1}}]))
    assert err.code == 40415, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": "dst"}, {"$match": {}}]))
    assert err.code == 40601, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": "system.x"}]))
    assert err.code == 31319, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": {"into": {"db": "config", "coll": "x"}}}]))
    assert err.code == 31320, err.details
    err = failure(lambda: db.src.aggregate([{"$out": {"db": "local", "coll": "x"}}]))
    assert err.code == 31321, err.details
    err = failure(lambda: db.src.aggregate([{"$merge": 5}]))
    assert err.code == 14, err.details
    # A matched result carrying another _id would change the target's _id.
    err = failure(lambda: db.src.aggregate([{"$match": {"_id": 1}}, {"$set": {"_id": 9}}, {"$merge": {"into": "dst", "on": "k"}}]))
    assert err.code == 66, err.details
    assert list(db.dst.find({}, {"_id": 1, "k": 1})) == [{"_id": 1, "k": "x"}]


# ------------------------------------------------------------------ aggregate: 1


def test_documents_then_other_stages(db):
    result = list(
        db.aggregate([{"$documents": [{"x": 10}, {"x": 2}, {"x": 5}]}, {"$sort": {"x": 1}}, {"$project": {"_id": 0, "x": 1}}])
    )
    assert result == [{"x": 2}, {"x": 5}, {"x": 10}]
    computed = list(db.aggregate([{"$documents": {"$map": {"input": [1, 2, 3], "in": {"n": "$$this"}}}}]))
    assert computed == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_documents_into_out_and_merge(db):
    db.aggregate([{"$documents": [{"_id": 1, "v": "a"}, {"_id": 2, "v": "b"}]}, {"$out": "made"}])
    assert by_id(db.made) == [{"_id": 1, "v": "a"}, {"_id": 2, "v": "b"}]
    db.aggregate([{"$documents": [{"_id": 2, "w": 1}]}, {"$merge": "made"}])
    assert by_id(db.made) == [{"_id": 1, "v": "a"}, {"_id": 2, "v": "b", "w": 1}]


def test_documents_with_lookup_and_union_with(db):
    db.places.insert_many([{"_id": 1, "zip": 94301, "name": "Palo Alto"}, {"_id": 2, "zip": 10019, "name": "New York"}])
    joined = list(
        db.aggregate(
            [
                {"$documents": [{"zip_id": 94301}, {"zip_id": 10019}]},
                {"$lookup": {"from": "places", "localField": "zip_id", "foreignField": "zip", "as": "place"}},
                {"$project": {"_id": 0, "zip_id": 1, "name": {"$first": "$place.name"}}},
            ]
        )
    )
    assert joined == [{"zip_id": 94301, "name": "Palo Alto"}, {"zip_id": 10019, "name": "New York"}]
    union = list(db.aggregate([{"$documents": [{"_id": 0}]}, {"$unionWith": "places"}, {"$project": {"_id": 1}}]))
    assert union == [{"_id": 0}, {"_id": 1}, {"_id": 2}]


def test_collection_less_errors(db):
    db.items.insert_one({"_id": 1})
    err = failure(lambda: db.aggregate([{"$match": {}}]))
    assert err.code == 73, err.details
    assert "a collection is required" in err.details["errmsg"]
    err = failure(lambda: db.items.aggregate([{"$documents": [{"a": 1}]}]))
    assert err.code == 73, err.details
    err = failure(lambda: db.items.aggregate([{"$listLocalSessions": {}}]))
    assert err.code == 73, err.details
    err = failure(lambda: db.aggregate([{"$documents": [{"a": 1}]}, {"$documents": [{"a": 2}]}]))
    assert err.code == 40602, err.details
    err = failure(lambda: db.aggregate([{"$documents": 5}]))
    assert err.code == 5858203, err.details
    err = failure(lambda: db.aggregate([{"$listSessions": {}}]))
    assert "not supported by docgate" in err.details["errmsg"]
    err = failure(lambda: db.aggregate([{"$currentOp": {}}]))
    assert err.code == 73 and "'admin' database" in err.details["errmsg"], err.details
    err = failure(lambda: db.command({"aggregate": 2, "pipeline": [], "cursor": {}}))
    assert err.code == 9, err.details


def test_explain_of_collection_less_aggregate(db):
    plan = db.command({"explain": {"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}]}], "cursor": {}}})
    assert plan["ok"] == 1.0
    assert plan["queryPlanner"]["namespace"] == f"{db.name}.$cmd.aggregate"
    inline = db.command({"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}]}], "explain": True})
    assert inline["queryPlanner"]["winningPlan"] == {"stage": "QUEUED_DATA"}
    # Explain answers the errors the aggregation would.
    err = failure(lambda: db.command({"explain": {"aggregate": 1, "pipeline": [{"$match": {}}], "cursor": {}}}))
    assert err.code == 73, err.details
    err = failure(lambda: db.command({"explain": {"aggregate": "items", "pipeline": [{"$documents": []}], "cursor": {}}}))
    assert err.code == 73, err.details


def test_list_local_sessions(client, db):
    with client.start_session() as session:
        db.items.insert_one({"_id": 1}, session=session)
        mine = session.session_id["id"]
        listed = list(db.aggregate([{"$listLocalSessions": {}}]))
        ids = [s["_id"]["id"] for s in listed]
        assert mine in ids
        entry = next(s for s in listed if s["_id"]["id"] == mine)
        assert isinstance(entry["lastUse"], datetime.datetime)
        assert isinstance(entry["_id"]["uid"], bytes) and len(entry["_id"]["uid"]) == 32
        # Not authenticated: the uid is the SHA-256 of the empty user name, and no user.
        import hashlib

        assert entry["_id"]["uid"] == hashlib.sha256(b"").digest()
        assert "user" not in entry
        all_users = list(client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
        assert mine in [s["_id"]["id"] for s in all_users]
        nobody = list(client.admin.aggregate([{"$listLocalSessions": {"users": [{"user": "nobody", "db": "admin"}]}}]))
        assert mine not in [s["_id"]["id"] for s in nobody]
        matched = list(
            db.aggregate([{"$listLocalSessions": {}}, {"$match": {"_id.id": Binary(mine.bytes if hasattr(mine, "bytes") else mine, 4)}}])
        )
        assert len(matched) == 1
    with client.start_session() as session:
        session.start_transaction()
        err = failure(lambda: list(db.aggregate([{"$listLocalSessions": {}}], session=session)))
        assert err.code == 263, err.details
        session.abort_transaction()
    err = failure(lambda: list(db.aggregate([{"$listLocalSessions": {"allUsers": True, "users": []}}])))
    assert err.code == 9, err.details
    err = failure(lambda: list(db.aggregate([{"$listLocalSessions": {"bogus": 1}}])))
    assert err.code == 40415, err.details
