"""Text search through pymongo: text indexes (weights, default_language, the wildcard
index), `$text` with terms, phrases, negations, `$caseSensitive`, `$diacriticSensitive`,
`$language`, `{$meta: "textScore"}` in projections, sorts and pipelines, and MongoDB's
errors. Expected results follow MongoDB's manual ("$text" and its `articles` examples,
"Text Score", "Text Indexes").
"""

from __future__ import annotations

import pytest
from pymongo import TEXT
from pymongo.errors import OperationFailure

ARTICLES = [
    {"_id": 1, "subject": "coffee", "author": "xyz", "views": 50},
    {"_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5},
    {"_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90},
    {"_id": 4, "subject": "baking", "author": "xyz", "views": 100},
    {"_id": 5, "subject": "Café Con Leche", "author": "abc", "views": 200},
    {"_id": 6, "subject": "Сырники", "author": "jkl", "views": 80},
    {"_id": 7, "subject": "coffee and cream", "author": "efg", "views": 10},
    {"_id": 8, "subject": "Cafe con Leche", "author": "xyz", "views": 10},
]


@pytest.fixture
def articles(coll):
    coll.create_index([("subject", TEXT)])
    coll.insert_many(ARTICLES)
    return coll


def found(coll, search, **options):
    query = {"$text": {"$search": search, **options}}
    return sorted(d["_id"] for d in coll.find(query))


def test_index_is_listed_as_mongodb_lists_it(articles):
    index = articles.index_information()["subject_text"]
    assert index["key"] == [("_fts", "text"), ("_ftsx", 1)]
    assert index["weights"] == {"subject": 1}
    assert index["default_language"] == "english"
    assert index["language_override"] == "language"
    assert index["textIndexVersion"] == 3


def test_terms_are_ored_and_stemmed(articles):
    assert found(articles, "coffee") == [1, 2, 7]
    assert found(articles, "bake coffee cake") == [1, 2, 3, 4, 7]


def test_phrases_and_negations(articles):
    assert found(articles, '"coffee shop"') == [2]
    assert found(articles, "coffee -shop") == [1, 7]
    assert found(articles, "the") == []


def test_case_and_diacritic_sensitivity(articles):
    assert found(articles, "Coffee", **{"$caseSensitive": True}) == [2]
    assert found(articles, '"Café Con Leche"', **{"$caseSensitive": True}) == [5]
    assert found(articles, "CAFÉ", **{"$diacriticSensitive": True}) == [5]
    assert found(articles, "leches -cafés", **{"$diacriticSensitive": True}) == [8]
    assert found(articles, "cafe") == [5, 8]


def test_text_score_in_projection_and_sort(articles):
    # The manual: "Baking a cake" scores 0.75 for "cake".
    doc = articles.find_one({"$text": {"$search": "cake"}}, {"score": {"$meta": "textScore"}})
    assert doc["_id"] == 3 and doc["score"] == pytest.approx(0.75)
    ranked = list(
        articles.find(
            {"$text": {"$search": "coffee cake"}},
            {"score": {"$meta": "textScore"}, "_id": 1},
        ).sort([("score", {"$meta": "textScore"})])
    )
    scores = [d["score"] for d in ranked]
    assert scores == sorted(scores, reverse=True)
    # "coffee" alone scores 1.0 (its term is the stem "coffe": no whole-string boost) and
    # ranks first.
    assert ranked[0]["_id"] == 1 and ranked[0]["score"] == pytest.approx(1.0)
    # Without the projection, the score never shows.
    assert all("score" not in d and len(d) == 4 for d in articles.find({"$text": {"$search": "coffee"}}))


def test_a_scored_read_without_a_sort_streams_its_batches(coll):
    # Scored as each batch is read (getMore by getMore), every match keeps its own score
    # and no batch shows the score's hidden field.
    coll.create_index([("body", TEXT)])
    coll.insert_many(
        [{"_id": i, "body": " ".join(["tea"] * (1 + i % 5) + ["pot"] * (i % 3))} for i in range(600)]
    )
    search = {"$text": {"$search": "tea"}}
    by_id = {d["_id"]: d["s"] for d in coll.find(search, {"s": {"$meta": "textScore"}}).sort(
        [("s", {"$meta": "textScore"})]
    )}
    streamed = list(coll.find(search, {"s": {"$meta": "textScore"}, "body": 0}, batch_size=25))
    assert len(streamed) == 600
    assert all(set(d) == {"_id", "s"} and d["s"] == by_id[d["_id"]] for d in streamed)
    excluded = coll.find_one(search, {"body": 0, "s": {"$meta": "textScore"}}, skip=17)
    assert set(excluded) == {"_id", "s"}


def test_weights_change_the_ranking(coll):
    coll.create_index([("title", TEXT), ("body", TEXT)], weights={"title": 10})
    coll.insert_many([{"_id": 1, "title": "x", "body": "tea"}, {"_id": 2, "title": "tea", "body": "x"}])
    ranked = coll.find({"$text": {"$search": "tea"}}, {"s": {"$meta": "textScore"}}).sort(
        [("s", {"$meta": "textScore"})]
    )
    assert [d["_id"] for d in ranked] == [2, 1]


def test_language_none_and_override(coll):
    coll.create_index([("a", TEXT)], default_language="none")
    coll.insert_many([{"_id": 1, "a": "the running"}, {"_id": 2, "a": "the run", "language": "english"}])
    assert found(coll, "the") == [1]
    assert found(coll, "run") == [2]
    assert found(coll, "running", **{"$language": "english"}) == [2]
    with pytest.raises(OperationFailure) as e:
        coll.insert_one({"a": "x", "language": "klingon"})
    assert e.value.code == 17262


def test_wildcard_text_index(coll):
    coll.create_index([("$**", TEXT)])
    coll.insert_many([{"_id": 1, "a": {"b": ["deep water"]}}, {"_id": 2, "c": "shallow"}])
    assert found(coll, "deep") == [1]
    assert coll.index_information()["$**_text"]["weights"] == {"$**": 1}


def test_writes_keep_the_index_current(articles):
    articles.update_one({"_id": 1}, {"$set": {"subject": "green tea"}})
    assert found(articles, "coffee") == [2, 7]
    assert found(articles, "tea") == [1]
    articles.delete_many({"$text": {"$search": "tea"}})
    assert found(articles, "tea") == []
    result = articles.update_many({"$text": {"$search": "coffee"}}, {"$set": {"hot": True}})
    assert result.modified_count == 2
    assert articles.count_documents({"$text": {"$search": "coffee"}}) == 2


def test_aggregate_first_match_and_meta(articles):
    out = list(
        articles.aggregate(
            [
                {"$match": {"$text": {"$search": "cake"}}},
                {"$project": {"subject": 1, "score": {"$meta": "textScore"}}},
            ]
        )
    )
    assert out == [{"_id": 3, "subject": "Baking a cake", "score": pytest.approx(0.75)}]
    with pytest.raises(OperationFailure) as e:
        list(articles.aggregate([{"$match": {}}, {"$match": {"$text": {"$search": "x"}}}]))
    assert e.value.code == 17313


def test_aggregate_scores_stream_through_stages_batch_by_batch(coll):
    # Enough matches for several batches: each match carries its score into the stages
    # after the $text read, and the score never shows unless a stage asks for it.
    coll.create_index([("subject", TEXT)])
    words = ["coffee", "cake", "coffee cake", "tea", "coffee coffee shop"]
    coll.insert_many(
        [{"_id": i, "subject": words[i % len(words)], "n": i} for i in range(500)]
    )
    text = {"$match": {"$text": {"$search": "coffee cake"}}}
    expected = {
        d["_id"]: d["score"]
        for d in coll.find(text["$match"], {"score": {"$meta": "textScore"}})
    }
    assert len(expected) == 400
    scored = list(
        coll.aggregate(
            [
                text,
                {"$set": {"score": {"$meta": "textScore"}, "twice": {"$multiply": ["$n", 2]}}},
                {"$match": {"score": {"$gt": 0}}},
                {"$project": {"subject": 1, "score": 1, "twice": 1}},
            ],
            batchSize=7,
        )
    )
    assert {d["_id"]: d["score"] for d in scored} == expected
    assert all(d["twice"] == 2 * d["_id"] for d in scored)
    # A $sort by score after a per-document stage: the sort is fed as a stream, each match
    # with its score; the order of the scores, and no score shows.
    chained = list(
        coll.aggregate(
            [
                text,
                {"$set": {"x": 1}},
                {"$sort": {"score": {"$meta": "textScore"}, "_id": 1}},
                {"$limit": 30},
                {"$project": {"x": 0}},
            ],
            batchSize=7,
        )
    )
    best = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:30]
    assert [d["_id"] for d in chained] == [k for k, _ in best]
    assert all(set(d) == {"_id", "subject", "n"} for d in chained)
    plain = list(coll.aggregate([text, {"$set": {"seen": True}}], batchSize=7))
    assert sorted(d["_id"] for d in plain) == sorted(expected)
    assert all(set(d) == {"_id", "subject", "n", "seen"} for d in plain)
    # A $group after the $text read (straight away, or after per-document stages) totals
    # the scores the matches carry.
    by_subject = {}
    for d in coll.find(text["$match"], {"subject": 1, "score": {"$meta": "textScore"}}):
        total, count = by_subject.get(d["subject"], (0.0, 0))
        by_subject[d["subject"]] = (total + d["score"], count + 1)
    group = {"$group": {"_id": "$subject", "s": {"$sum": {"$meta": "textScore"}}, "n": {"$sum": 1}}}
    for pipeline in [[text, group], [text, {"$set": {"x": 1}}, group]]:
        grouped = {d["_id"]: (d["s"], d["n"]) for d in coll.aggregate(pipeline)}
        assert set(grouped) == set(by_subject)
        for subject, (total, count) in by_subject.items():
            assert grouped[subject][1] == count
            assert grouped[subject][0] == pytest.approx(total)


def test_errors(articles):
    plain = articles.database[articles.name + "_plain"]
    plain.insert_one({"a": "x"})
    with pytest.raises(OperationFailure) as e:
        list(plain.find({"$text": {"$search": "x"}}))
    assert e.value.code == 27
    with pytest.raises(OperationFailure) as e:
        articles.create_index([("author", TEXT)])
    assert e.value.code == 85
    with pytest.raises(OperationFailure) as e:
        list(articles.find({}, {"s": {"$meta": "textScore"}}))
    assert e.value.code == 40218
    with pytest.raises(OperationFailure) as e:
        list(articles.find({"$nor": [{"$text": {"$search": "x"}}]}))
    assert e.value.code == 2
    with pytest.raises(OperationFailure) as e:
        articles.create_index([("b", TEXT)], name="other", default_language="klingon")
    assert e.value.code == 17264


def test_drop_and_recreate(articles):
    articles.drop_index("subject_text")
    with pytest.raises(OperationFailure) as e:
        list(articles.find({"$text": {"$search": "coffee"}}))
    assert e.value.code == 27
    articles.create_index([("subject", TEXT), ("author", TEXT)])
    assert found(articles, "xyz") == [1, 4, 8]


def test_explain_names_the_text_index(articles):
    plan = articles.find({"$text": {"$search": "coffee"}}).explain()
    assert "subject_text" in str(plan["queryPlanner"]["winningPlan"])


def test_a_long_document_is_indexed_whole(coll):
    coll.create_index([("body", TEXT)])
    words = [f"w{i}x" for i in range(5000)]
    coll.insert_one({"_id": "a", "body": " ".join(words), "name": "n" * 1000})
    coll.insert_one({"_id": "k" * 800, "body": " ".join(reversed(words))})
    assert found(coll, "w4999x") == ["a", "k" * 800]
    assert found(coll, "w0x -w2500x") == []
