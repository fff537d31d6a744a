#!/usr/bin/env python3
"""Runs MongoDB's CRUD specification tests (unified test format) through pymongo.

Measures docgate (or any server) against the `crud/tests/unified/*.json` files of MongoDB's
specifications repository, read from a directory given at run time (they are CC BY-NC-SA:
never copied into this repository). Prints pass/fail/skip per file and a total; with
--failures, each failing test and why. See tests/spec/README.md for usage.

Not for: other spec suites (only the entity types, operations and assertions the CRUD files
use are implemented; anything else fails the test naming the gap), or pytest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import traceback
from collections import Counter, defaultdict
from pathlib import Path

from bson import json_util
from bson.errors import BSONError
from pymongo import MongoClient, monitoring
from pymongo.client_session import ClientSession
from pymongo.errors import BulkWriteError, OperationFailure, PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import ReadPreference
from pymongo.write_concern import WriteConcern

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unified_match import UNSET, Mismatch, UnsupportedOperator, documents_equal, match, match_documents  # noqa: E402
from unified_ops import RunnerGap, SkipTest, bulk_error_result, run_operation  # noqa: E402

# Commands whose events the runner never records (unified format: sensitive commands and
# the runner's own configureFailPoint).
IGNORED_COMMANDS = {
    "configurefailpoint", "hello", "ismaster", "saslstart", "saslcontinue", "getnonce",
    "authenticate", "createuser", "updateuser", "copydbgetnonce", "copydbsaslstart", "copydb",
}
def read_preference(spec: dict):
    """A unified-format readPreference (`mode`, `maxStalenessSeconds`, `tagSets`) for pymongo."""
    mode = READ_PREFERENCES[spec["mode"]]
    options = {}
    if "maxStalenessSeconds" in spec:
        options["max_staleness"] = spec["maxStalenessSeconds"]
    if "tagSets" in spec:
        options["tag_sets"] = spec["tagSets"]
    return type(mode)(**options) if options else mode


READ_PREFERENCES = {
    "primary": ReadPreference.PRIMARY,
    "primaryPreferred": ReadPreference.PRIMARY_PREFERRED,
    "secondary": ReadPreference.SECONDARY,
    "secondaryPreferred": ReadPreference.SECONDARY_PREFERRED,
    "nearest": ReadPreference.NEAREST,
}
ITERATED_RESULTS = {"find", "aggregate", "listIndexes", "listCollections"}
CLIENT_SIDE = (RunnerGap, SkipTest, Mismatch, UnsupportedOperator)


class Failed(Exception):
    """A test assertion failed; the message is the reason reported."""


class EventRecorder(monitoring.CommandListener):
    def __init__(self, kinds, ignored=()):
        self.kinds = set(kinds)
        self.ignored = IGNORED_COMMANDS | {c.lower() for c in ignored}
        self.events = []

    def _keep(self, event) -> bool:
        return event.command_name.lower() not in self.ignored

    def started(self, event):
        if "commandStartedEvent" in self.kinds and self._keep(event):
            self.events.append(("commandStartedEvent", event))

    def succeeded(self, event):
        if "commandSucceededEvent" in self.kinds and self._keep(event):
            self.events.append(("commandSucceededEvent", event))

    def failed(self, event):
        if "commandFailedEvent" in self.kinds and self._keep(event):
            self.events.append(("commandFailedEvent", event))


def _version(text: str) -> tuple:
    parts = [int(p) for p in text.split("-")[0].split(".") if p.isdigit()]
    return tuple(parts + [0] * (3 - len(parts)))


class Server:
    """What runOnRequirements are checked against: version and topology of the target."""

    def __init__(self, client: MongoClient):
        self.version = _version(client.admin.command("buildInfo")["version"])
        hello = client.admin.command("hello")
        if hello.get("msg") == "isdbgrid":
            self.topology = "sharded"
        elif hello.get("serviceId") is not None:
            self.topology = "load-balanced"
        elif hello.get("setName"):
            self.topology = "replicaset"
        else:
            self.topology = "single"

    def unmet(self, requirements: list | None) -> str | None:
        """None if any alternative is met, else why the first one is not."""
        if not requirements:
            return None
        reasons = []
        for req in requirements:
            why = self._unmet_one(req)
            if why is None:
                return None
            reasons.append(why)
        return "; ".join(reasons)

    def _unmet_one(self, req: dict) -> str | None:
        if "minServerVersion" in req and self.version < _version(req["minServerVersion"]):
            return f"needs server >= {req['minServerVersion']}"
        if "maxServerVersion" in req and self.version > _version(req["maxServerVersion"]):
            return f"needs server <= {req['maxServerVersion']}"
        if "topologies" in req and self.topology not in req["topologies"] and not (
            self.topology == "sharded" and "sharded-replicaset" in req["topologies"]
        ):
            return f"needs topology {req['topologies']}"
        if req.get("serverless") == "require":
            return "needs serverless"
        if req.get("csfle"):
            return "needs csfle"
        if req.get("auth") is True:
            return "needs auth"
        if "serverParameters" in req:
            return "needs serverParameters (not checked by this runner)"
        return None


def _read_concern(spec):
    return ReadConcern(spec.get("level")) if spec is not None else None


def _entity_options(options: dict) -> dict:
    out = {}
    for key, value in options.items():
        if key == "writeConcern":
            out["write_concern"] = WriteConcern(**{("wtimeout" if k == "wtimeoutMS" else k): v for k, v in value.items()})
        elif key == "readConcern":
            out["read_concern"] = _read_concern(value)
        elif key == "readPreference":
            out["read_preference"] = read_preference(value)
        else:
            raise RunnerGap(f"entity option {key!r}")
    return out


class TestRun:
    """The entities, fail points and events of one test."""

    def __init__(self, uri: str, internal: MongoClient):
        self.uri = uri
        self.internal = internal
        self.entities: dict = {}
        self.recorders: dict = {}
        self.clients: list = []
        self.fail_points: list = []

    def create_entities(self, specs: list) -> None:
        for spec in specs:
            ((kind, opts),) = spec.items()
            eid = opts["id"]
            if kind == "client":
                self._create_client(eid, opts)
            elif kind == "database":
                client = self.entities[opts["client"]]
                self.entities[eid] = client.get_database(opts["databaseName"], **_entity_options(opts.get("databaseOptions", {})))
            elif kind == "collection":
                db = self.entities[opts["database"]]
                self.entities[eid] = db.get_collection(opts["collectionName"], **_entity_options(opts.get("collectionOptions", {})))
            elif kind == "session":
                client = self.entities[opts["client"]]
                self.entities[eid] = client.start_session(**opts.get("sessionOptions", {}))
            else:
                raise RunnerGap(f"entity type {kind!r}")

    def _create_client(self, eid: str, opts: dict) -> None:
        unknown = set(opts) - {"id", "observeEvents", "uriOptions", "useMultipleMongoses", "ignoreCommandMonitoringEvents"}
        if unknown:
            raise RunnerGap(f"client options {sorted(unknown)}")
        recorder = EventRecorder(opts.get("observeEvents", []), opts.get("ignoreCommandMonitoringEvents", []))
        client = MongoClient(self.uri, event_listeners=[recorder], serverSelectionTimeoutMS=10_000, **opts.get("uriOptions", {}))
        self.entities[eid] = client
        self.recorders[eid] = recorder
        self.clients.append(client)

    def fail_point(self, args: dict) -> None:
        client = self.entities[args["client"]]
        command = args["failPoint"]
        try:
            client.admin.command(command)
        except OperationFailure as e:
            raise Failed(f"failPoint: server refused configureFailPoint: {e.code} {e.details.get('codeName')}") from e
        self.fail_points.append((client, command["configureFailPoint"]))

    def close(self) -> None:
        for client, name in self.fail_points:
            try:
                client.admin.command({"configureFailPoint": name, "mode": "off"})
            except PyMongoError:
                pass
        for entity in self.entities.values():
            if isinstance(entity, ClientSession):
                entity.end_session()
        for client in self.clients:
            client.close()


def _error_details(err) -> tuple:
    """(code, codeName, message) of an error, from its first write error for bulk errors."""
    if isinstance(err, BulkWriteError):
        write_errors = err.details.get("writeErrors") or []
        if write_errors:
            first = write_errors[0]
            return first.get("code"), first.get("codeName"), str(first.get("errmsg", ""))
    if isinstance(err, OperationFailure):
        return err.code, (err.details or {}).get("codeName"), str(err)
    return None, None, str(err)


def check_error(expected: dict, err: Exception, opname: str) -> None:
    server_side = isinstance(err, OperationFailure)
    code, code_name, message = _error_details(err)
    desc = f"{type(err).__name__}({code} {code_name}: {message[:160]})"
    for key, want in expected.items():
        if key == "isError":
            continue
        if key == "isClientError":
            if want != (not server_side):
                raise Failed(f"{opname}: want {'client' if want else 'server'} error, got {desc}")
        elif key == "errorCode":
            if code != want:
                raise Failed(f"{opname}: error code differs: got {code} {code_name} want {want} ({message[:160]})")
        elif key == "errorCodeName":
            if code_name != want:
                raise Failed(f"{opname}: error code name differs: got {code_name} want {want} ({message[:160]})")
        elif key == "errorContains":
            if want.lower() not in message.lower():
                raise Failed(f"{opname}: error message lacks {want!r}: got {desc}")
        elif key == "errorResponse":
            if not isinstance(err, OperationFailure):
                raise Failed(f"{opname}: want a server response, got {desc}")
            try:
                match(want, err.details or {})
            except Mismatch as m:
                raise Failed(f"{opname}: errorResponse: {m}") from m
        elif key == "errorLabelsContain":
            missing = [lab for lab in want if not (isinstance(err, PyMongoError) and err.has_error_label(lab))]
            if missing:
                raise Failed(f"{opname}: error lacks labels {missing}: {desc}")
        elif key == "errorLabelsOmit":
            present = [lab for lab in want if isinstance(err, PyMongoError) and err.has_error_label(lab)]
            if present:
                raise Failed(f"{opname}: error has labels {present}: {desc}")
        elif key == "expectResult":
            if not isinstance(err, BulkWriteError):
                raise Failed(f"{opname}: want a partial result, got {desc}")
            try:
                match(want, bulk_error_result(err.details))
            except Mismatch as m:
                raise Failed(f"{opname}: partial result: {m}") from m
        else:
            raise RunnerGap(f"expectError.{key}")


def run_operations(run: TestRun, operations: list) -> None:
    for i, op in enumerate(operations):
        name, obj, args = op["name"], op["object"], op.get("arguments", {})
        label = f"op {i} {name}"
        if obj == "testRunner":
            if name == "failPoint":
                run.fail_point(args)
                continue
            raise RunnerGap(f"testRunner operation {name!r}")
        if obj not in run.entities:
            raise RunnerGap(f"{label}: unknown entity {obj!r}")
        expect_error = op.get("expectError")
        try:
            result = run_operation(run.entities[obj], name, args, run.entities)
        except CLIENT_SIDE:
            raise
        except (PyMongoError, BSONError, ValueError, TypeError) as err:
            if expect_error is None:
                code, code_name, message = _error_details(err)
                raise Failed(f"{label}: unexpected error {type(err).__name__} {code} {code_name}: {message[:240]}") from err
            check_error(expect_error, err, label)
            continue
        if expect_error is not None:
            raise Failed(f"{label}: want an error {dict(expect_error)}, got success {result!r:.200}")
        if "saveResultAsEntity" in op:
            run.entities[op["saveResultAsEntity"]] = result
        if "expectResult" in op:
            want = op["expectResult"]
            try:
                if name in ITERATED_RESULTS and isinstance(want, list):
                    match_documents(want, result)
                else:
                    match(want, result, root=True)
            except Mismatch as m:
                raise Failed(f"{label}: result: {m}") from m


def _event_fields(kind: str, event) -> dict:
    if kind == "commandStartedEvent":
        return {"command": event.command, "commandName": event.command_name, "databaseName": event.database_name}
    if kind == "commandSucceededEvent":
        return {"reply": event.reply, "commandName": event.command_name, "databaseName": event.database_name}
    return {"commandName": event.command_name, "databaseName": event.database_name}


def check_events(run: TestRun, expected: list) -> None:
    for per_client in expected:
        event_type = per_client.get("eventType", "command")
        if event_type != "command":
            raise RunnerGap(f"expectEvents eventType {event_type!r}")
        actual = run.recorders[per_client["client"]].events
        want = per_client["events"]
        if len(actual) < len(want) or (len(actual) > len(want) and not per_client.get("ignoreExtraEvents")):
            names = [f"{k}:{e.command_name}" for k, e in actual]
            raise Failed(f"events: want {len(want)} events, got {len(actual)} {names}")
        for i, (want_event, (kind, event)) in enumerate(zip(want, actual)):
            ((want_kind, fields),) = want_event.items()
            if want_kind != kind:
                raise Failed(f"events[{i}]: want {want_kind}, got {kind} {event.command_name}")
            got = _event_fields(kind, event)
            for key, value in fields.items():
                if key not in got:
                    raise RunnerGap(f"event field {key!r}")
                try:
                    match(value, got[key], root=True, path=f"events[{i}].{key}")
                except Mismatch as m:
                    raise Failed(f"events: {m}") from m


def check_outcome(internal: MongoClient, outcome: list) -> None:
    for data in outcome:
        coll = internal[data["databaseName"]].get_collection(
            data["collectionName"], read_concern=ReadConcern("local"), read_preference=ReadPreference.PRIMARY
        )
        why = documents_equal(data["documents"], list(coll.find({}, sort=[("_id", 1)])))
        if why:
            raise Failed(f"outcome {data['collectionName']}: {why}")


def load_initial_data(internal: MongoClient, initial: list) -> None:
    majority = WriteConcern(w="majority")
    for data in initial:
        db = internal.get_database(data["databaseName"], write_concern=majority)
        db.drop_collection(data["collectionName"])
        options = data.get("createOptions", {})
        if data["documents"] and not options:
            db[data["collectionName"]].insert_many(data["documents"])
        else:
            db.create_collection(data["collectionName"], **options)
            if data["documents"]:
                db[data["collectionName"]].insert_many(data["documents"])


def run_test(uri, internal, server: Server, spec: dict, test: dict) -> tuple[str, str]:
    """Returns ("pass" | "fail" | "skip", reason)."""
    why = server.unmet(spec.get("runOnRequirements")) or server.unmet(test.get("runOnRequirements"))
    if why:
        return "skip", why
    if "skipReason" in test:
        return "skip", f"skipReason: {test['skipReason']}"
    if any(op["name"] == "count" for op in test["operations"]):
        return "skip", "pymongo has no Collection.count() (pymongo's own runner skips these)"
    run = TestRun(uri, internal)
    try:
        load_initial_data(internal, spec.get("initialData", []))
        run.create_entities(spec.get("createEntities", []))
        run_operations(run, test["operations"])
        if "expectEvents" in test:
            check_events(run, test["expectEvents"])
        if "outcome" in test:
            check_outcome(internal, test["outcome"])
        return "pass", ""
    except SkipTest as e:
        return "skip", str(e)
    except (RunnerGap, UnsupportedOperator) as e:
        return "fail", f"runner gap: {e}"
    except Failed as e:
        return "fail", str(e)
    except PyMongoError as e:
        code, code_name, message = _error_details(e)
        return "fail", f"setup/check error {type(e).__name__} {code} {code_name}: {message[:240]}"
    except Exception as e:  # a runner bug must not end the measurement
        return "fail", f"runner error {type(e).__name__}: {e} at {traceback.format_tb(e.__traceback__)[-1].strip()}"
    finally:
        run.close()


def run_files(uri: str, files: list[Path], show_failures: bool, show_skips: bool = False) -> int:
    internal = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    server = Server(internal)
    print(f"server {'.'.join(map(str, server.version))}, topology {server.topology}")
    totals = defaultdict(int)
    failures = []
    skip_reasons = Counter()
    for path in files:
        spec = json_util.loads(path.read_text())
        counts = defaultdict(int)
        for test in spec["tests"]:
            status, reason = run_test(uri, internal, server, spec, test)
            counts[status] += 1
            if status == "fail":
                failures.append((path.name, test["description"], reason))
            elif status == "skip":
                skip_reasons[reason] += 1
        for k, v in counts.items():
            totals[k] += v
        print(f"{path.name:60} pass {counts['pass']:3}  fail {counts['fail']:3}  skip {counts['skip']:3}")
    internal.close()
    applicable = totals["pass"] + totals["fail"]
    print(f"TOTAL pass {totals['pass']} of {applicable} applicable (fail {totals['fail']}, skip {totals['skip']})")
    if show_skips:
        print("\nSKIPPED (count, reason)")
        for reason, n in skip_reasons.most_common():
            print(f"{n:4}  {reason}")
    if show_failures:
        print("\nFAILURES")
        for fname, desc, reason in failures:
            print(f"{fname} :: {desc}\n    {reason}")
    return totals["pass"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", required=True, type=Path, help="directory of crud/tests/unified/*.json")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--uri", help="a running server's connection string")
    target.add_argument("--start", action="store_true", help="start target/debug/docgate on a fresh SQLite directory")
    target.add_argument("--backend", help="start docgate on a fresh database in this postgres:// cluster")
    parser.add_argument("--failures", action="store_true", help="print each failing test and why")
    parser.add_argument("--skips", action="store_true", help="print why tests were skipped, counted")
    parser.add_argument("--expect-pass", type=int, help="exit 1 if fewer tests than this pass")
    parser.add_argument("--only", help="run only files whose name contains this")
    opts = parser.parse_args()
    files = sorted(opts.specs.glob("*.json"))
    if opts.only:
        files = [f for f in files if opts.only in f.name]
    if not files:
        print(f"no *.json files in {opts.specs}", file=sys.stderr)
        return 2
    if opts.uri:
        passed = run_files(opts.uri, files, opts.failures, opts.skips)
    else:
        passed = _run_on_started_server(opts.backend, files, opts.failures, opts.skips)
    if opts.expect_pass is not None and passed < opts.expect_pass:
        print(f"FAILED: {passed} passed, expected at least {opts.expect_pass}", file=sys.stderr)
        return 1
    return 0


def _run_on_started_server(backend: str | None, files: list[Path], show_failures: bool, show_skips: bool) -> int:
    """Starts docgate as the pymongo suite does (tests/clients/python/conftest.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python"))
    os.environ["DOCGATE_BACKEND"] = backend or "sqlite"
    from conftest import DocgateServer

    with tempfile.TemporaryDirectory(prefix="docgate-spec-") as tmp:
        server = DocgateServer(Path(tmp), extra_args=["--enable-test-commands"], fresh_storage=True)
        print(f"docgate {server.bin} on {server.backend}")
        server.start()
        try:
            # As the spec tests expect: a replica set the driver discovers (docgate is the
            # primary of a one-member set), so read preferences are sent as given.
            uri = f"mongodb://127.0.0.1:{server.port}/?replicaSet=docgate"
            return run_files(uri, files, show_failures, show_skips)
        finally:
            server.stop()
            if server.proc is not None and server.proc.returncode not in (0, -15, None):
                print(f"docgate exited with {server.proc.returncode}:\n{server.log_tail()}", file=sys.stderr)
            if backend:
                _drop_postgres_database(backend, server.backend)


def _drop_postgres_database(cluster_url: str, database_url: str) -> None:
    """Drops the database fresh_postgres_database made for this run (psql, as it made it)."""
    name = database_url.rsplit("/", 1)[1]
    done = subprocess.run(
        ["psql", "-q", cluster_url, "-c", f"DROP DATABASE IF EXISTS {name}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        print(f"could not drop database {name}: {done.stderr.strip()}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
