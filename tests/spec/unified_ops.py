"""Operations of MongoDB's unified test format, run through pymongo, for the CRUD spec tests.

`run_operation` maps one test operation (name + spec arguments) to the pymongo call and turns
the result into the spec's shape (insertedId, matchedCount, ...). An argument or operation
pymongo or this runner has no way to express raises RunnerGap: such a test fails with a
reason that names the gap; it is never passed by ignoring the argument.

Not for: entities, requirements and assertions (crud_unified.py), value matching
(unified_match.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, ReturnDocument, UpdateMany, UpdateOne
from pymongo.write_concern import WriteConcern
from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.database import Database

from unified_match import UNSET


class RunnerGap(Exception):
    """Something this runner (or pymongo) cannot express; the test fails naming it."""


class SkipTest(Exception):
    """The test cannot apply to pymongo at all (as pymongo's own unified runner skips it)."""


# spec argument name -> pymongo keyword, for the keyword-style pymongo methods
SNAKE = {
    "arrayFilters": "array_filters",
    "bypassDocumentValidation": "bypass_document_validation",
    "batchSize": "batch_size",
    "allowDiskUse": "allow_disk_use",
    "maxTimeMS": "max_time_ms",
    "returnDocument": "return_document",
    "noCursorTimeout": "no_cursor_timeout",
    "returnKey": "return_key",
    "showRecordId": "show_record_id",
}


def _key_list(spec):
    """A sort/hint/keys document as pymongo's list of (key, direction) pairs; strings pass."""
    if isinstance(spec, Mapping):
        return list(spec.items())
    return spec


def _kwargs(args: dict, allowed: set[str], entities, rename: bool = True) -> dict:
    out = {}
    for key, value in args.items():
        if key == "rawData":
            raise SkipTest("pymongo has no rawData option")
        if key not in allowed:
            raise RunnerGap(f"argument {key!r} is not supported by this runner/pymongo")
        if key == "session":
            value = entities[value]
        elif key == "returnDocument":
            value = ReturnDocument.AFTER if value == "After" else ReturnDocument.BEFORE
        out[SNAKE.get(key, key) if rename else key] = value
    return out


def _take(args: dict, *names: str) -> list:
    missing = [n for n in names if n not in args]
    if missing:
        raise RunnerGap(f"missing required arguments {missing}")
    return [args.pop(n) for n in names]


def _update_result(r):
    if not r.acknowledged:
        return UNSET
    out = {
        "matchedCount": r.matched_count,
        "modifiedCount": r.modified_count,
        "upsertedCount": 0 if r.upserted_id is None else 1,
    }
    if r.upserted_id is not None:
        out["upsertedId"] = r.upserted_id
    return out


def bulk_result(r):
    if not r.acknowledged:
        return UNSET
    return {
        "deletedCount": r.deleted_count,
        "insertedCount": r.inserted_count,
        "matchedCount": r.matched_count,
        "modifiedCount": r.modified_count,
        "upsertedCount": r.upserted_count,
        "upsertedIds": {str(k): v for k, v in (r.upserted_ids or {}).items()},
    }


def bulk_error_result(details: Mapping) -> dict:
    """The partial BulkWriteResult a BulkWriteError carries (for expectError.expectResult)."""
    return {
        "deletedCount": details.get("nRemoved", 0),
        "insertedCount": details.get("nInserted", 0),
        "matchedCount": details.get("nMatched", 0),
        "modifiedCount": details.get("nModified", 0),
        "upsertedCount": details.get("nUpserted", 0),
        "upsertedIds": {str(u["index"]): u["_id"] for u in details.get("upserted", [])},
    }


WRITE_MODEL_ARGS = {
    "insertOne": (InsertOne, ("document",), set()),
    "updateOne": (UpdateOne, ("filter", "update"), {"upsert", "collation", "arrayFilters", "hint", "sort"}),
    "updateMany": (UpdateMany, ("filter", "update"), {"upsert", "collation", "arrayFilters", "hint"}),
    "replaceOne": (ReplaceOne, ("filter", "replacement"), {"upsert", "collation", "hint", "sort"}),
    "deleteOne": (DeleteOne, ("filter",), {"collation", "hint"}),
    "deleteMany": (DeleteMany, ("filter",), {"collation", "hint"}),
}


def _write_model(request: Mapping, entities, namespaced: bool = False):
    if len(request) != 1:
        raise RunnerGap(f"write model with {len(request)} keys")
    ((kind, spec),) = request.items()
    if kind not in WRITE_MODEL_ARGS:
        raise RunnerGap(f"write model {kind!r}")
    model, required, optional = WRITE_MODEL_ARGS[kind]
    spec = dict(spec)
    positional = _take(spec, *required)
    return model(*positional, **_kwargs(spec, optional | ({"namespace"} if namespaced else set()), entities))


def _client_bulk_write(client: MongoClient, args: dict, entities):
    (requests,) = _take(args, "models")
    models = [_write_model(r, entities, namespaced=True) for r in requests]
    if "writeConcern" in args:
        args["write_concern"] = WriteConcern(**args.pop("writeConcern"))
    kw = _kwargs(
        args,
        {"ordered", "bypassDocumentValidation", "session", "comment", "let", "verboseResults", "write_concern"},
        entities,
    )
    if "verboseResults" in kw:
        kw["verbose_results"] = kw.pop("verboseResults")
    r = client.bulk_write(models, **kw)
    if not r.acknowledged:
        return UNSET
    out = {
        "insertedCount": r.inserted_count,
        "upsertedCount": r.upserted_count,
        "matchedCount": r.matched_count,
        "modifiedCount": r.modified_count,
        "deletedCount": r.deleted_count,
    }
    if r.has_verbose_results:
        out["insertResults"] = {str(k): {"insertedId": v.inserted_id} for k, v in r.insert_results.items()}
        out["updateResults"] = {str(k): _update_result(v) for k, v in r.update_results.items()}
        out["deleteResults"] = {str(k): {"deletedCount": v.deleted_count} for k, v in r.delete_results.items()}
    else:
        out["insertResults"] = out["updateResults"] = out["deleteResults"] = {}
    return out


FIND_ARGS = {
    "filter", "projection", "skip", "limit", "sort", "batchSize", "collation", "hint", "maxTimeMS",
    "comment", "allowDiskUse", "let", "session", "min", "max", "returnKey", "showRecordId",
    "noCursorTimeout",
}
# keyword names pymongo's find_one_and_*, aggregate, count_documents and distinct pass as
# command fields (camelCase, not renamed)
COMMAND_KWARGS = {"collation", "maxTimeMS", "bypassDocumentValidation"}


def _find_one_and(target: Collection, name: str, args: dict, entities):
    common = {"projection", "sort", "hint", "session", "let", "comment"} | COMMAND_KWARGS
    if name == "findOneAndDelete":
        (flt,) = _take(args, "filter")
        kw = _kwargs(args, common, entities)
        return target.find_one_and_delete(flt, **_camel_back(kw))
    if name == "findOneAndReplace":
        flt, repl = _take(args, "filter", "replacement")
        kw = _kwargs(args, common | {"upsert", "returnDocument"}, entities)
        return target.find_one_and_replace(flt, repl, **_camel_back(kw))
    flt, upd = _take(args, "filter", "update")
    kw = _kwargs(args, common | {"upsert", "returnDocument", "arrayFilters"}, entities)
    return target.find_one_and_update(flt, upd, **_camel_back(kw))


def _camel_back(kw: dict) -> dict:
    """find_one_and_* take collation/maxTimeMS/bypassDocumentValidation as command fields."""
    back = {"max_time_ms": "maxTimeMS", "bypass_document_validation": "bypassDocumentValidation"}
    return {back.get(k, k): v for k, v in kw.items()}


def _collection_operation(target: Collection, name: str, args: dict, entities):
    if name == "insertOne":
        (doc,) = _take(args, "document")
        r = target.insert_one(doc, **_kwargs(args, {"bypassDocumentValidation", "session", "comment"}, entities))
        return {"insertedId": r.inserted_id} if r.acknowledged else UNSET
    if name == "insertMany":
        (docs,) = _take(args, "documents")
        kw = _kwargs(args, {"ordered", "bypassDocumentValidation", "session", "comment"}, entities)
        r = target.insert_many(docs, **kw)
        return {"insertedIds": {str(i): v for i, v in enumerate(r.inserted_ids)}} if r.acknowledged else UNSET
    if name in ("updateOne", "updateMany", "replaceOne"):
        second = "replacement" if name == "replaceOne" else "update"
        flt, change = _take(args, "filter", second)
        allowed = {"upsert", "bypassDocumentValidation", "collation", "hint", "session", "let", "comment"}
        if name != "replaceOne":
            allowed.add("arrayFilters")
        if name != "updateMany":
            allowed.add("sort")
        kw = _kwargs(args, allowed, entities)
        method = {"updateOne": target.update_one, "updateMany": target.update_many, "replaceOne": target.replace_one}
        return _update_result(method[name](flt, change, **kw))
    if name in ("deleteOne", "deleteMany"):
        (flt,) = _take(args, "filter")
        kw = _kwargs(args, {"collation", "hint", "session", "let", "comment"}, entities)
        r = (target.delete_one if name == "deleteOne" else target.delete_many)(flt, **kw)
        return {"deletedCount": r.deleted_count} if r.acknowledged else UNSET
    if name == "bulkWrite":
        (requests,) = _take(args, "requests")
        models = [_write_model(r, entities) for r in requests]
        kw = _kwargs(args, {"ordered", "bypassDocumentValidation", "session", "comment", "let"}, entities)
        return bulk_result(target.bulk_write(models, **kw))
    if name in ("find", "findOne"):
        flt = args.pop("filter", {})
        kw = _kwargs(args, FIND_ARGS, entities)
        if name == "findOne":
            return target.find_one(flt, **kw)
        return list(target.find(flt, **kw))
    if name.startswith("findOneAnd"):
        return _find_one_and(target, name, args, entities)
    if name == "aggregate":
        return _aggregate(target, args, entities)
    if name == "countDocuments":
        (flt,) = _take(args, "filter")
        kw = _kwargs(args, {"skip", "limit", "hint", "session", "comment"} | COMMAND_KWARGS, entities, False)
        return target.count_documents(flt, **kw)
    if name == "estimatedDocumentCount":
        kw = _kwargs(args, {"comment", "maxTimeMS"}, entities, False)
        return target.estimated_document_count(**kw)
    if name == "distinct":
        key, flt = _take(args, "fieldName", "filter")
        kw = _kwargs(args, {"session", "comment", "hint"} | COMMAND_KWARGS, entities, False)
        return target.distinct(key, flt, **kw)
    if name == "count":
        raise SkipTest("pymongo has no Collection.count() (removed in 4.0), as pymongo's own runner skips")
    if name == "createIndex":
        (keys,) = _take(args, "keys")
        kw = _kwargs(args, {"name", "unique", "sparse", "expireAfterSeconds", "session", "comment"}, entities, False)
        return target.create_index(_key_list(keys), **kw)
    if name == "listIndexes":
        return list(target.list_indexes(**_kwargs(args, {"session", "comment"}, entities)))
    if name == "drop":
        return target.drop(**_kwargs(args, {"session", "comment"}, entities))
    raise RunnerGap(f"collection operation {name!r}")


def _aggregate(target, args: dict, entities):
    (pipeline,) = _take(args, "pipeline")
    kw = _kwargs(
        args,
        {"let", "comment", "session", "allowDiskUse", "batchSize", "maxTimeMS", "collation", "hint",
         "bypassDocumentValidation"},
        entities,
        False,
    )
    return list(target.aggregate(pipeline, **kw))


def _database_operation(target: Database, name: str, args: dict, entities):
    if name == "aggregate":
        return _aggregate(target, args, entities)
    if name == "dropCollection":
        (coll,) = _take(args, "collection")
        target.drop_collection(coll, **_kwargs(args, {"session", "comment"}, entities))
        return UNSET
    if name == "createCollection":
        (coll,) = _take(args, "collection")
        session = entities[args.pop("session")] if "session" in args else None
        # The spec's createCollection is one `create` command: pymongo's own check that the
        # collection does not exist (a listCollections first) is not part of it.
        target.create_collection(coll, session=session, check_exists=False, **args)
        return UNSET
    if name == "modifyCollection":
        (coll,) = _take(args, "collection")
        return target.command({"collMod": coll, **args})
    if name == "runCommand":
        (command,) = _take(args, "command")
        args.pop("commandName", None)
        return target.command(command, **_kwargs(args, {"session"}, entities))
    if name == "listCollections":
        return list(target.list_collections(**_kwargs(args, {"filter", "session"}, entities)))
    raise RunnerGap(f"database operation {name!r}")


def run_operation(target, name: str, args: dict, entities):
    """Runs operation `name` on entity `target`; returns the result in the spec's shape."""
    args = dict(args)
    if isinstance(target, Collection):
        return _collection_operation(target, name, args, entities)
    if isinstance(target, Database):
        return _database_operation(target, name, args, entities)
    if name == "clientBulkWrite" and isinstance(target, MongoClient):
        return _client_bulk_write(target, args, entities)
    raise RunnerGap(f"operation {name!r} on {type(target).__name__}")
