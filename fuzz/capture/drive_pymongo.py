#!/usr/bin/env python3
"""pymongo traffic for the seed corpora: CRUD, operators, updates (operators, pipelines,
arrayFilters, upserts), aggregation and findAndModify, once uncompressed and once with each
compressor pymongo has, through the recording relay (capture.sh). Errors from the server are
part of the traffic and are ignored.

Usage: drive_pymongo.py PORT
"""

import datetime
import re
import sys
import uuid

import bson
from bson import Decimal128, Int64, ObjectId, Regex
from pymongo import MongoClient, ReturnDocument, UpdateOne, DeleteMany, InsertOne, ReplaceOne
from pymongo.errors import PyMongoError

port = int(sys.argv[1])


def attempt(step):
    try:
        step()
    except PyMongoError:
        pass


def workload(client, suffix):
    db = client["fuzz_seed"]
    c = db["people_" + suffix]
    attempt(c.drop)
    c.insert_many([
        {"_id": 1, "name": "ann", "age": 31, "tags": ["a", "b"], "addr": {"city": "Oslo", "zip": "0150"}},
        {"_id": 2, "name": "bob", "age": Int64(25), "scores": [{"k": "x", "v": 3}, {"k": "y", "v": 9}]},
        {"_id": ObjectId(), "name": "cid", "age": 40.5, "born": datetime.datetime(1990, 5, 17)},
        {"_id": "s", "name": "dee", "price": Decimal128("19.99"), "u": uuid.UUID(int=7), "bin": b"\x00\x01"},
        {"_id": 5, "name": "eve", "re": Regex("^e", "i"), "nested": {"a": [1, [2, 3], {"b": None}]}},
    ])
    finds = [
        {}, {"_id": 1}, {"_id": {"$in": [1, 2, "s"]}}, {"age": {"$gt": 24, "$lte": 40.5}},
        {"name": {"$regex": "^a", "$options": "i"}}, {"name": re.compile("e$")},
        {"tags": "a"}, {"tags": {"$all": ["a", "b"]}}, {"tags": {"$size": 2}},
        {"scores": {"$elemMatch": {"k": "y", "v": {"$gte": 5}}}}, {"addr.city": "Oslo"},
        {"$or": [{"age": {"$lt": 30}}, {"name": {"$in": ["eve", "zed"]}}]},
        {"$and": [{"age": {"$exists": True}}, {"age": {"$type": "number"}}]},
        {"$nor": [{"name": "ann"}]}, {"age": {"$not": {"$gt": 30}}}, {"age": {"$mod": [5, 0]}},
        {"$expr": {"$gt": ["$age", 30]}}, {"price": {"$gte": Decimal128("10")}},
        {"born": {"$lt": datetime.datetime(2000, 1, 1)}}, {"nested.a.1": [2, 3]},
        {"bin": {"$bitsAllSet": [0]}}, {"name": {"$nin": ["ann"]}, "age": {"$ne": None}},
        {"tags.0": "a"}, {"u": uuid.UUID(int=7)}, {"missing": None},
    ]
    for f in finds:
        attempt(lambda: list(c.find(f).sort([("age", -1), ("_id", 1)]).skip(1).limit(3)))
        attempt(lambda: list(c.find(f, {"name": 1, "_id": 0}).batch_size(2)))
        attempt(lambda: c.count_documents(f))
    attempt(lambda: c.distinct("name", {"age": {"$gt": 1}}))
    attempt(lambda: c.create_index([("age", 1), ("name", -1)]))
    attempt(lambda: c.create_index("addr.city", sparse=True))
    attempt(lambda: list(c.find({"age": {"$gte": 20}}).sort("age", 1).hint([("age", 1), ("name", -1)])))
    updates = [
        ({"_id": 1}, {"$set": {"addr.city": "Bergen", "n": 1}, "$inc": {"age": 1}}),
        ({"_id": 2}, {"$push": {"scores": {"$each": [{"k": "z", "v": 1}], "$sort": {"v": -1}, "$slice": 3}}}),
        ({"_id": 2}, {"$set": {"scores.$[s].v": 0}}),
        ({"tags": "a"}, {"$addToSet": {"tags": {"$each": ["c", "a"]}}, "$currentDate": {"at": True}}),
        ({"_id": 1}, {"$unset": {"n": ""}, "$rename": {"addr": "address"}, "$min": {"age": 5}}),
        ({"_id": 1}, {"$pull": {"tags": {"$in": ["b"]}}, "$pop": {"list": 1}, "$mul": {"age": 2}}),
        ({"_id": 5}, {"$setOnInsert": {"x": 1}, "$max": {"age": 50}, "$bit": {"flags": {"or": 5}}}),
        ({"_id": 9}, [{"$set": {"total": {"$add": ["$age", 1]}, "name": {"$concat": ["n", "m"]}}}, {"$unset": "tmp"}]),
        ({"name": "bob"}, {"$set": {"scores.$.v": 10}}),
    ]
    for q, u in updates:
        attempt(lambda: c.update_one(q, u, upsert=True, array_filters=[{"s.k": "x"}] if "scores.$[s].v" in str(u) else None))
    attempt(lambda: c.update_many({"age": {"$gt": 0}}, {"$inc": {"visits": 1}}))
    attempt(lambda: c.replace_one({"_id": "s"}, {"name": "dee2", "price": Decimal128("1.5")}))
    attempt(lambda: c.find_one_and_update({"_id": 1}, {"$inc": {"age": 1}}, return_document=ReturnDocument.AFTER, sort=[("age", 1)]))
    attempt(lambda: c.find_one_and_delete({"name": "eve"}))
    attempt(lambda: c.bulk_write([InsertOne({"_id": 20, "v": 1}), UpdateOne({"_id": 20}, {"$set": {"v": 2}}),
                                  ReplaceOne({"_id": 20}, {"v": 3}), DeleteMany({"v": {"$gt": 100}})], ordered=False))
    pipelines = [
        [{"$match": {"age": {"$gt": 20}}}, {"$group": {"_id": "$name", "n": {"$sum": 1}, "avg": {"$avg": "$age"}}}, {"$sort": {"n": -1}}],
        [{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": True}}, {"$project": {"t": "$tags", "upper": {"$toUpper": "$name"}}}],
        [{"$lookup": {"from": "people_" + suffix, "localField": "_id", "foreignField": "_id", "as": "self"}}, {"$limit": 2}],
        [{"$facet": {"a": [{"$count": "n"}], "b": [{"$bucket": {"groupBy": "$age", "boundaries": [0, 30, 100], "default": "other"}}]}}],
        [{"$addFields": {"d": {"$dateToString": {"date": "$born", "format": "%Y"}}}}, {"$replaceRoot": {"newRoot": {"x": "$d"}}}],
        [{"$setWindowFields": {"sortBy": {"age": 1}, "output": {"r": {"$rank": {}}}}}],
    ]
    for p in pipelines:
        attempt(lambda: list(c.aggregate(p)))
    attempt(lambda: c.delete_one({"_id": 2}))
    attempt(lambda: c.delete_many({"age": {"$lt": 100}}))
    attempt(lambda: db.command("listCollections", filter={"name": {"$regex": "^people"}}))
    attempt(lambda: c.drop_indexes())


for compressors in [None, "zlib", "snappy", "zstd"]:
    options = {"directConnection": True, "serverSelectionTimeoutMS": 5000, "uuidRepresentation": "standard"}
    if compressors:
        options["compressors"] = compressors
    client = MongoClient(f"mongodb://127.0.0.1:{port}/", **options)
    workload(client, compressors or "plain")
    client.close()
print("pymongo traffic done")
