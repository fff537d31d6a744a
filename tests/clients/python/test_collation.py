"""Collations through pymongo: case- and accent-insensitive matching, language sort orders,
numericOrdering, collations on every command that takes one, a collection's default
collation, and MongoDB's errors for what is malformed or not supported.

Expected results follow MongoDB's manual ("Collation", and its examples with `fr`
strength 1 and `de`/`sv` orders).
"""

from __future__ import annotations

import pytest
from bson.son import SON
from pymongo import ASCENDING
from pymongo.collation import Collation, CollationStrength
from pymongo.errors import DuplicateKeyError, OperationFailure

CI = Collation(locale="en", strength=CollationStrength.SECONDARY)
CAFES = [
    {"_id": 1, "category": "café", "status": "A"},
    {"_id": 2, "category": "cafe", "status": "a"},
    {"_id": 3, "category": "cafE", "status": "a"},
]


@pytest.fixture
def cafes(coll):
    coll.insert_many(CAFES)
    return coll


def ids(docs):
    return [d["_id"] for d in docs]


def test_find_case_insensitive_with_strength_two(coll):
    coll.insert_many([{"_id": i, "name": n} for i, n in enumerate(["Ada", "ada", "ADA", "Bob"])])
    assert sorted(ids(coll.find({"name": "ada"}, collation=CI))) == [0, 1, 2]
    assert ids(coll.find({"name": "ada"})) == [1]


def test_find_accent_insensitive_manual_example(cafes):
    # The manual: {category: "cafe"} with {locale: "fr", strength: 1} matches all three.
    found = cafes.find({"category": "cafe"}, collation=Collation(locale="fr", strength=1))
    assert sorted(ids(found)) == [1, 2, 3]
    found = cafes.find({"category": "cafe"}, collation=Collation(locale="fr", strength=2))
    assert sorted(ids(found)) == [2, 3]


def test_an_index_without_collation_does_not_hide_matches(coll):
    coll.create_index([("name", ASCENDING)])
    coll.insert_many([{"_id": i, "name": n} for i, n in enumerate(["Ada", "ada", "ADA", "Bob"])])
    assert sorted(ids(coll.find({"name": "ada"}, collation=CI))) == [0, 1, 2]
    assert sorted(ids(coll.find({"name": {"$in": ["bob", "x"]}}, collation=CI))) == [3]
    assert sorted(ids(coll.find({"name": {"$gte": "b"}}, collation=CI))) == [3]
    assert sorted(ids(coll.find({"_id": {"$lt": 2}}, collation=CI))) == [0, 1]


def test_operators_compare_under_the_collation(coll):
    coll.insert_many(
        [
            {"_id": 1, "tags": ["Red", "GREEN"], "sub": {"k": "X"}},
            {"_id": 2, "tags": ["blue"], "sub": {"k": "y"}},
        ]
    )
    assert ids(coll.find({"tags": {"$all": ["red", "green"]}}, collation=CI)) == [1]
    assert ids(coll.find({"tags": {"$elemMatch": {"$eq": "BLUE"}}}, collation=CI)) == [2]
    assert ids(coll.find({"tags": {"$nin": ["red"]}}, collation=CI)) == [2]
    assert ids(coll.find({"sub": {"k": "x"}}, collation=CI)) == [1]
    assert ids(coll.find({"$expr": {"$eq": ["$sub.k", "Y"]}}, collation=CI)) == [2]
    # $regex is not affected by the collation.
    assert ids(coll.find({"tags": {"$regex": "^red$"}}, collation=CI)) == []


def test_sort_german_and_swedish(coll):
    words = ["Äpfel", "Zebra", "Apfel", "Ofen", "Öl"]
    coll.insert_many([{"_id": i, "w": w} for i, w in enumerate(words)])

    def order(locale):
        cursor = coll.find({}, {"_id": 0}).sort("w", ASCENDING).collation(Collation(locale=locale))
        return [d["w"] for d in cursor]

    assert order("de") == ["Apfel", "Äpfel", "Ofen", "Öl", "Zebra"]
    assert order("sv") == ["Apfel", "Ofen", "Zebra", "Äpfel", "Öl"]


def test_numeric_ordering(coll):
    coll.insert_many([{"_id": i, "n": n} for i, n in enumerate(["10", "9", "2", "100"])])
    plain = [d["n"] for d in coll.find().sort("n", ASCENDING).collation(Collation(locale="en"))]
    assert plain == ["10", "100", "2", "9"]
    numeric = Collation(locale="en", numericOrdering=True)
    ordered = [d["n"] for d in coll.find().sort("n", ASCENDING).collation(numeric)]
    assert ordered == ["2", "9", "10", "100"]
    assert ids(coll.find({"n": {"$gt": "9"}}, collation=numeric)) == [0, 3]


def test_collated_sort_across_get_more_batches(coll):
    coll.insert_many([{"_id": i, "w": w} for i, w in enumerate(["b", "A", "c", "B", "a", "C"] * 5)])
    cursor = coll.find({}).sort([("w", ASCENDING), ("_id", ASCENDING)]).collation(CI).batch_size(4)
    words = [d["w"].lower() for d in cursor]
    assert words == sorted(words) and len(words) == 30


def test_count_distinct_and_aggregate(coll):
    coll.insert_many([{"_id": i, "name": n} for i, n in enumerate(["Ada", "ada", "Bob", "bob", "Cy"])])
    assert coll.count_documents({"name": "ADA"}, collation=CI) == 2
    assert coll.count_documents({"name": "ADA"}) == 0
    assert coll.database.command("count", coll.name, query={"name": "bob"}, collation=CI.document)["n"] == 2
    assert len(coll.distinct("name", collation=CI)) == 3
    assert len(coll.distinct("name")) == 5
    grouped = coll.aggregate(
        [{"$group": {"_id": "$name", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}], collation=CI
    )
    assert [g["n"] for g in grouped] == [2, 2, 1]
    matched = coll.aggregate([{"$match": {"name": "cy"}}], collation=CI)
    assert ids(matched) == [4]


def test_lookup_matches_under_the_collation(db):
    db.users.insert_many([{"_id": 1, "name": "Ada"}])
    db.orders.insert_many([{"_id": 10, "user": "ada"}, {"_id": 11, "user": "bob"}])
    joined = list(
        db.users.aggregate(
            [{"$lookup": {"from": "orders", "localField": "name", "foreignField": "user", "as": "o"}}],
            collation=CI,
        )
    )
    assert ids(joined[0]["o"]) == [10]


def test_update_delete_and_find_and_modify(coll):
    coll.insert_many([{"_id": i, "name": n} for i, n in enumerate(["Ada", "ada", "Bob", "bob"])])
    result = coll.update_many({"name": "ADA"}, {"$set": {"seen": True}}, collation=CI)
    assert (result.matched_count, result.modified_count) == (2, 2)
    assert coll.update_one({"name": "ADA"}, {"$set": {"x": 1}}).matched_count == 0
    found = coll.find_one_and_update(
        {"name": "BOB"}, {"$set": {"picked": True}}, sort=[("_id", -1)], collation=CI
    )
    assert found["_id"] == 3
    removed = coll.find_one_and_delete({"name": "bOb"}, sort=[("_id", 1)], collation=CI)
    assert removed["_id"] == 2
    assert coll.delete_many({"name": "ADA"}, collation=CI).deleted_count == 2
    assert ids(coll.find()) == [3]


def test_update_operators_compare_under_the_collation(coll):
    coll.insert_one({"_id": 1, "tags": ["Red", "green"]})
    coll.update_one({"_id": 1}, {"$pull": {"tags": "RED"}}, collation=CI)
    coll.update_one({"_id": 1}, {"$addToSet": {"tags": "GREEN"}}, collation=CI)
    assert coll.find_one({"_id": 1})["tags"] == ["green"]


def test_collection_default_collation_is_inherited_and_listed(db):
    db.create_collection("names", collation=Collation(locale="en", strength=2))
    names = db.names
    names.insert_many([{"_id": 1, "n": "Ada"}, {"_id": 2, "n": "ada"}, {"_id": 3, "n": "Bob"}])
    assert sorted(ids(names.find({"n": "ADA"}))) == [1, 2]
    assert names.count_documents({"n": "ada"}) == 2
    # An operation's own collation overrides the default.
    assert ids(names.find({"n": "ada"}, collation=Collation(locale="simple"))) == [2]
    (info,) = list(db.list_collections(filter={"name": "names"}))
    assert info["options"]["collation"] == SON(
        [
            ("locale", "en"),
            ("caseLevel", False),
            ("caseFirst", "off"),
            ("strength", 2),
            ("numericOrdering", False),
            ("alternate", "non-ignorable"),
            ("maxVariable", "punct"),
            ("normalization", False),
            ("backwards", False),
            ("version", "57.1"),
        ]
    )


def test_explain_keeps_string_comparisons_out_of_sql(coll):
    coll.create_index([("name", ASCENDING)])
    coll.insert_one({"name": "Ada"})
    plain = coll.find({"name": "ada"}).explain()
    collated = coll.find({"name": "ada"}).collation(CI).explain()
    assert plain["queryPlanner"]["winningPlan"]["docgate"]["pushedFilterExact"] is True
    assert collated["queryPlanner"]["winningPlan"]["docgate"]["pushedFilterExact"] is False


def test_unknown_locale_and_malformed_fields_are_refused(coll):
    coll.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as error:
        list(coll.find({}, collation={"locale": "zz_nope"}))
    assert error.value.code == 2
    assert 'Field \'locale\' is invalid in: { locale: "zz_nope" }' in str(error.value)
    with pytest.raises(OperationFailure) as error:
        coll.count_documents({}, collation={"locale": "en", "strength": 6})
    assert error.value.code == 51024
    with pytest.raises(OperationFailure) as error:
        list(coll.find({}, collation={"locale": "en", "colour": "red"}))
    assert error.value.code == 40415
    with pytest.raises(OperationFailure) as error:
        coll.database.create_collection("bad", collation={"strength": 2})
    assert error.value.code == 40414


def test_backwards_orders_accents_from_the_end(coll):
    # The manual's Canadian French example: cote < côte < coté < côté.
    coll.insert_many([{"_id": i, "w": w} for i, w in enumerate(["côté", "coté", "côte", "cote"])])

    def order(collation):
        return [d["w"] for d in coll.find().sort("w", ASCENDING).collation(collation)]

    backwards = ["cote", "côte", "coté", "côté"]
    assert order(Collation(locale="fr_CA")) == backwards
    assert order(Collation(locale="fr", backwards=True)) == backwards
    assert order(Collation(locale="fr")) == ["cote", "coté", "côte", "côté"]
    assert order(Collation(locale="fr_CA", backwards=False)) == ["cote", "coté", "côte", "côté"]
    # A collated index of that collation orders the same way.
    coll.create_index([("w", ASCENDING)], collation=Collation(locale="fr", backwards=True))
    assert order(Collation(locale="fr", backwards=True)) == backwards
    (index,) = [i for i in coll.list_indexes() if i["name"] == "w_1"]
    assert index["collation"]["backwards"] is True


def test_locale_variants(coll):
    # ICU's example: German phonebook order reads ö as "oe".
    words = ["Goldmann", "Götz", "Goethe", "Göthe", "Göbel"]
    coll.insert_many([{"_id": i, "w": w} for i, w in enumerate(words)])

    def order(locale):
        return [d["w"] for d in coll.find().sort("w", ASCENDING).collation(Collation(locale=locale))]

    assert order("de") == ["Göbel", "Goethe", "Goldmann", "Göthe", "Götz"]
    assert order("de@collation=phonebook") == ["Göbel", "Goethe", "Göthe", "Götz", "Goldmann"]
    coll.database.create_collection("phonebook", collation=Collation(locale="de@collation=phonebook"))
    (info,) = list(coll.database.list_collections(filter={"name": "phonebook"}))
    assert info["options"]["collation"]["locale"] == "de@collation=phonebook"
    # Not one of MongoDB's variants of the locale: ICU's error.
    with pytest.raises(OperationFailure) as error:
        list(coll.find({}, collation={"locale": "zh@collation=pinyin"}))
    assert error.value.code == 2
    assert "Did you mean 'zh'?" in str(error.value)
    # One of them that ICU4X has no data for: refused, never ignored.
    with pytest.raises(OperationFailure) as error:
        list(coll.find({}, collation={"locale": "sv@collation=search"}))
    assert error.value.code == 2
    assert "Field 'locale' is invalid in" in str(error.value)


def test_unique_index_at_strength_two_refuses_a_case_variant(db):
    db.people.create_index([("name", ASCENDING)], unique=True, collation=CI)
    db.people.insert_one({"name": "ada"})
    with pytest.raises(DuplicateKeyError) as error:
        db.people.insert_one({"name": "Ada"})
    assert error.value.code == 11000
    (index,) = [i for i in db.people.list_indexes() if i["name"] == "name_1"]
    assert index["collation"]["strength"] == 2 and index["collation"]["version"] == "57.1"
    # A simple query does not use the collated keys; a collated one finds the name.
    assert ids(db.people.find({"name": "ADA"}, {"_id": 0})) == []
    assert [d["name"] for d in db.people.find({"name": "ADA"}, collation=CI)] == ["ada"]
    assert [d["name"] for d in db.people.find({"name": "ada"})] == ["ada"]


def test_an_index_inherits_the_collection_default(db):
    db.create_collection("people", collation=CI)
    db.people.create_index([("name", ASCENDING)], unique=True)
    (index,) = [i for i in db.people.list_indexes() if i["name"] == "name_1"]
    assert index["collation"]["locale"] == "en"
    db.people.insert_one({"name": "Ada"})
    with pytest.raises(DuplicateKeyError):
        db.people.insert_one({"name": "ADA"})
    # Building over existing case variants fails as a duplicate too.
    db.others.insert_many([{"name": "Bob"}, {"name": "bob"}])
    with pytest.raises(OperationFailure) as error:
        db.others.create_index([("name", ASCENDING)], unique=True, collation=CI)
    assert error.value.code == 11000
    assert db.people.count_documents({"name": "ada"}) == 1


def test_a_collated_index_serves_a_query_of_its_collation(db):
    db.people.create_index([("name", ASCENDING)], collation=CI)
    db.people.insert_many([{"_id": i, "name": n} for i, n in enumerate(["Ada", "ada", "Bob", "carl"])])
    found = db.people.find({"name": "ADA"}).collation(CI)
    assert sorted(ids(found)) == [0, 1]
    plan = db.people.find({"name": "ADA"}).collation(CI).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "IXSCAN" and plan["inputStage"]["indexName"] == "name_1"
    assert plan["docgate"]["pushedFilterExact"] is True
    ranged = db.people.find({"name": {"$gte": "b", "$lt": "CARL"}}, collation=CI)
    assert ids(ranged) == [2]
    assert sorted(ids(db.people.find({"name": {"$in": ["BOB", "Carl"]}}, collation=CI))) == [2, 3]
    # Another collation (or none) does not use it, and still answers right.
    other = db.people.find({"name": "ADA"}).collation(Collation(locale="en", strength=1))
    assert sorted(ids(other)) == [0, 1]
    simple = db.people.find({"name": "Ada"}).explain()["queryPlanner"]["winningPlan"]
    assert simple.get("inputStage", {}).get("stage") != "IXSCAN"
    assert ids(db.people.find({"name": "Ada"})) == [0]


def test_a_collated_index_orders_a_sort_of_its_collation(db):
    db.words.create_index([("w", ASCENDING)], collation=Collation(locale="sv"))
    words = ["Äpfel", "Zebra", "Apfel", "Ofen", "Öl"] * 3
    db.words.insert_many([{"_id": i, "w": w} for i, w in enumerate(words)])
    cursor = db.words.find({}, {"_id": 0}).sort("w", ASCENDING).collation(Collation(locale="sv"))
    plan = cursor.explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "IXSCAN"
    got = [d["w"] for d in db.words.find({}).sort("w", ASCENDING).collation(Collation(locale="sv")).batch_size(4)]
    assert got == [w for w in ["Apfel", "Ofen", "Zebra", "Äpfel", "Öl"] for _ in range(3)]
    top = db.words.find({}).sort("w", -1).limit(2).collation(Collation(locale="sv"))
    assert [d["w"] for d in top] == ["Öl", "Öl"]
    # German order from the same data: sorted in memory, not by the Swedish index.
    german = [d["w"] for d in db.words.find({}).sort("w", ASCENDING).collation(Collation(locale="de"))]
    assert german == [w for w in ["Apfel", "Äpfel", "Ofen", "Öl", "Zebra"] for _ in range(3)]


def test_elem_match_projection_compares_under_the_collation(coll):
    coll.insert_one({"_id": 1, "pets": [{"kind": "Cat", "n": 1}, {"kind": "dog", "n": 2}]})
    found = coll.find_one({}, {"pets": {"$elemMatch": {"kind": "DOG"}}}, collation=CI)
    assert found["pets"] == [{"kind": "dog", "n": 2}]
    many = list(coll.find({"pets.kind": "cat"}, {"pets.$": 1}, collation=CI))
    assert many[0]["pets"] == [{"kind": "Cat", "n": 1}]


def test_the_id_index_has_the_collection_collation(db):
    # MongoDB: the _id index of a collection created with a collation has that collation,
    # so `_id`s that differ only by case collide at strength 2 and lookups ignore case.
    db.create_collection("names", collation=CI)
    names = db.names
    names.insert_one({"_id": "ada", "n": 1})
    with pytest.raises(DuplicateKeyError) as error:
        names.insert_one({"_id": "Ada", "n": 2})
    assert error.value.code == 11000
    assert "index: _id_ dup key: { _id: \"Ada\" }" in str(error.value)
    names.insert_many([{"_id": "Bob"}, {"_id": 7}, {"_id": "carl"}])
    assert ids(names.find({"_id": "ADA"})) == ["ada"]
    assert sorted(ids(names.find({"_id": {"$in": ["BOB", 7, "nobody"]}})), key=str) == [7, "Bob"]
    assert ids(names.find({"_id": {"$gte": "b", "$lt": "CARL"}})) == ["Bob"]
    assert [d["_id"] for d in names.find({}, {"_id": 1}).sort("_id", -1) if isinstance(d["_id"], str)] == [
        "carl",
        "Bob",
        "ada",
    ]
    # An explicit simple collation compares `_id`s by their bytes.
    assert ids(names.find({"_id": "ADA"}, collation=Collation(locale="simple"))) == []
    assert ids(names.find({"_id": "ada"}, collation=Collation(locale="simple"))) == ["ada"]
    # Updates, replaces and deletes by `_id` go through the collation too.
    assert names.update_one({"_id": "BOB"}, {"$set": {"seen": True}}).matched_count == 1
    assert names.replace_one({"_id": "ADA"}, {"n": 3}).matched_count == 1
    assert names.find_one({"_id": "ada"})["n"] == 3
    assert names.delete_one({"_id": "CARL"}).deleted_count == 1
    assert names.count_documents({}) == 3
    # An upsert that meets a case variant updates it rather than inserting a twin.
    names.update_one({"_id": "BOB"}, {"$set": {"again": True}}, upsert=True)
    assert names.count_documents({}) == 3


def test_the_collated_id_index_is_listed_and_used(db):
    db.create_collection("names", collation=CI)
    names = db.names
    names.insert_many([{"_id": f"user{i:03}"} for i in range(50)])
    (id_index, *others) = list(names.list_indexes())
    assert id_index["name"] == "_id_" and id_index["key"] == {"_id": 1}
    assert id_index["collation"]["locale"] == "en" and id_index["collation"]["strength"] == 2
    assert others == []
    (info,) = list(db.list_collections(filter={"name": "names"}))
    assert info["idIndex"]["collation"]["strength"] == 2
    plan = names.find({"_id": "USER007"}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "IXSCAN" and plan["inputStage"]["indexName"] == "_id_"
    assert plan["docgate"]["pushedFilterExact"] is True
    assert ids(names.find({"_id": "USER007"})) == ["user007"]
    # A simple read takes the primary key: exact by bytes.
    simple = names.find({"_id": "user007"}).collation(Collation(locale="simple")).explain()
    assert simple["queryPlanner"]["winningPlan"]["docgate"]["pushedFilterExact"] is True
    # Another collation cannot use it; the answer is still right.
    other = Collation(locale="en", strength=1)
    assert ids(names.find({"_id": "USER007"}, collation=other)) == ["user007"]
    plan = names.find({"_id": "USER007"}).collation(other).explain()["queryPlanner"]["winningPlan"]
    assert plan["docgate"]["pushedFilterExact"] is False
    # The `_id` index counts once, cannot be dropped, and survives dropIndexes("*").
    names.create_index([("x", ASCENDING)])
    assert names.database.command("collStats", "names")["nindexes"] == 2
    with pytest.raises(OperationFailure) as error:
        names.drop_index("_id_")
    assert error.value.code == 72
    reply = names.database.command("dropIndexes", "names", index="*")
    assert reply["nIndexesWas"] == 2
    assert [i["name"] for i in names.list_indexes()] == ["_id_"]
    with pytest.raises(DuplicateKeyError):
        names.insert_one({"_id": "USER001"})


def test_an_id_index_with_another_collation_is_refused(db):
    db.create_collection("names", collation=CI)
    with pytest.raises(OperationFailure) as error:
        db.names.create_index([("_id", ASCENDING)], collation=Collation(locale="fr"))
    assert error.value.code == 2
    assert "The _id index must have the same collation as the collection" in str(error.value)
    # The same collation, or none, is the existing index: nothing to do.
    db.names.create_index([("_id", ASCENDING)], name="_id_")
    db.names.create_index([("_id", ASCENDING)], name="_id_", collation=CI)
    assert len(list(db.names.list_indexes())) == 1
    db.plain.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as error:
        db.plain.create_index([("_id", ASCENDING)], collation=CI)
    assert error.value.code == 2


def test_convert_to_capped_keeps_the_collated_id_index(db):
    db.create_collection("names", collation=CI)
    db.names.insert_many([{"_id": "ada"}, {"_id": "bob"}])
    db.command("convertToCapped", "names", size=100000)
    with pytest.raises(DuplicateKeyError):
        db.names.insert_one({"_id": "BOB"})
    assert ids(db.names.find({"_id": "ADA"})) == ["ada"]


def test_a_collated_compound_index_serves_a_sort_of_its_collation(db):
    db.people.create_index([("team", ASCENDING), ("name", -1)], collation=CI)
    rows = [("Red", "ada"), ("red", "Bob"), ("RED", "carl"), ("blue", "Dan"), ("Blue", "eve")]
    db.people.insert_many([{"_id": i, "team": t, "name": n} for i, (t, n) in enumerate(rows)])
    cursor = db.people.find({"team": "red"}).sort("name", -1).collation(CI)
    plan = cursor.explain()["queryPlanner"]["winningPlan"]
    assert "SORT" not in str(plan) and plan["inputStage"]["indexName"] == "team_1_name_-1"
    assert [d["name"] for d in db.people.find({"team": "red"}).sort("name", -1).collation(CI)] == [
        "carl",
        "Bob",
        "ada",
    ]
    both = db.people.find({}).sort([("team", ASCENDING), ("name", -1)]).collation(CI)
    plan = both.explain()["queryPlanner"]["winningPlan"]
    assert "SORT" not in str(plan)
    assert ids(db.people.find({}).sort([("team", ASCENDING), ("name", -1)]).collation(CI)) == [4, 3, 2, 1, 0]


def test_out_into_a_collated_collection_keeps_its_id_collation(db):
    db.create_collection("target", collation=CI)
    db.source.insert_many([{"_id": "ada"}, {"_id": "ADA"}])
    with pytest.raises(OperationFailure) as error:
        list(db.source.aggregate([{"$out": "target"}]))
    assert error.value.code == 11000
    db.source.delete_one({"_id": "ADA"})
    list(db.source.aggregate([{"$out": "target"}]))
    assert ids(db.target.find({"_id": "Ada"})) == ["ada"]
    assert next(db.target.list_indexes())["collation"]["strength"] == 2
