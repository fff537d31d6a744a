"""Fixtures for the pymongo suite: a real docgate process and clients for it.

The suite starts the docgate binary itself (one server for the whole session,
on a free loopback port, over a fresh temporary data directory) and stops it at
the end. Each test gets its own database, named after the test, so tests do not
see each other's data.

Environment:
  DOCGATE_BIN       path of the server binary (default: target/debug/docgate
                    under the repository root)
  DOCGATE_BACKEND   "sqlite" (default): a fresh data directory per run; any
                    other value is passed verbatim as --backend (for backends
                    whose storage the caller prepared, e.g. a postgres URL)

Suites that need a server of their own (test_auth.py: users must not leak into the
shared server) build a DocgateServer with fresh_storage=True and extra_args: on
sqlite (or sqlite:DIR) a new data directory, on a postgres URL a new database made with psql
in the same cluster.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence

import pytest
from pymongo import MongoClient

REPO_ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_fresh_databases = itertools.count()


def fresh_postgres_database(url: str) -> str:
    """Creates an empty database in the cluster of a postgres URL (as tests/run_all.sh's
    backend_arg_postgres does) and returns the URL of the new database."""
    if not url.startswith(("postgres://", "postgresql://")):
        raise RuntimeError(f"cannot make fresh storage for DOCGATE_BACKEND={url!r}")
    name = f"dg_pytest_{os.getpid()}_{next(_fresh_databases)}_{time.time_ns() % 10**9}"
    done = subprocess.run(
        ["psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", f"CREATE DATABASE {name}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"psql could not create database {name}: {done.stderr.strip()}")
    return f"{url.rsplit('/', 1)[0]}/{name}"


class DocgateServer:
    """One docgate process listening on 127.0.0.1:port, started with `extra_args`
    after --listen and --backend (e.g. TLS flags)."""

    def __init__(self, workdir: Path, extra_args: Sequence[str] = (), fresh_storage: bool = False):
        self.workdir = workdir
        self.bin = Path(os.environ.get("DOCGATE_BIN", REPO_ROOT / "target" / "debug" / "docgate"))
        backend = os.environ.get("DOCGATE_BACKEND", "sqlite")
        if backend == "sqlite" or (fresh_storage and backend.startswith("sqlite:")):
            data_dir = workdir / "data"
            data_dir.mkdir()
            backend = f"sqlite:{data_dir}"
        elif fresh_storage:
            backend = fresh_postgres_database(backend)
        self.backend = backend
        self.extra_args = [str(a) for a in extra_args]
        self.port = free_port()
        self.log_path = workdir / "docgate.log"
        self.proc: subprocess.Popen | None = None
        self.death_reported = False

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def start(self) -> None:
        if not self.bin.is_file():
            raise RuntimeError(f"docgate binary not found at {self.bin}; run `cargo build` first")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [
                str(self.bin),
                "--listen",
                f"127.0.0.1:{self.port}",
                "--backend",
                self.backend,
                "--rest-listen",
                "off",
                "--admin-listen",
                "off",
                *self.extra_args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"docgate exited with {self.proc.returncode} before listening:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(
            f"docgate did not accept connections on port {self.port} within "
            f"{START_TIMEOUT_S:.0f} s:\n{self.log_tail()}"
        )

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def cli(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        """Runs `docgate --backend <this server's storage> ARGS...` (e.g. `user create`)."""
        return subprocess.run(
            [str(self.bin), "--backend", self.backend, *args],
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def client(self, **kwargs) -> MongoClient:
        kwargs.setdefault("serverSelectionTimeoutMS", 10_000)
        kwargs.setdefault("connectTimeoutMS", 10_000)
        kwargs.setdefault("socketTimeoutMS", 30_000)
        return MongoClient(self.uri, **kwargs)


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory(prefix="docgate-pytest-") as tmp:
        srv = DocgateServer(Path(tmp))
        srv.start()
        try:
            yield srv
            if srv.proc is not None and srv.proc.poll() is not None and not srv.death_reported:
                raise RuntimeError(
                    f"docgate exited with {srv.proc.returncode} during the suite:\n{srv.log_tail()}"
                )
        finally:
            srv.stop()
            if os.environ.get("DOCGATE_SHOW_LOG"):
                print(f"\n--- docgate log ---\n{srv.log_tail(200)}")


@pytest.fixture(autouse=True)
def _server_stays_up(request, server):
    """Stops the session at once if a test took the server down, instead of
    letting every later test wait for a server that is gone."""
    yield
    if server.proc is not None and server.proc.poll() is not None:
        server.death_reported = True
        pytest.exit(
            f"docgate exited with {server.proc.returncode} during {request.node.nodeid}:\n"
            f"{server.log_tail()}",
            returncode=1,
        )


@pytest.fixture(scope="session")
def client(server):
    c = server.client()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def db(client, request):
    """A database of this test's own (MongoDB database names: <64 chars, no '.', '$', ' ')."""
    node = request.node.name
    digest = hashlib.sha1(node.encode()).hexdigest()[:8]
    name = "t_" + re.sub(r"[^A-Za-z0-9_]", "_", node)[:40] + "_" + digest
    return client[name]


@pytest.fixture
def coll(db):
    return db["items"]
