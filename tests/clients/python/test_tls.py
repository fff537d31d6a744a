"""TLS with pymongo: a server of this module's own, started with the test certificates
of fixtures/tls and --tls-mode required, serves a client that trusts the test CA
(tls=True, tlsCAFile=...) and refuses a plain client and a client that trusts another CA.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from pymongo.errors import ServerSelectionTimeoutError

from conftest import REPO_ROOT, DocgateServer

CERTS = REPO_ROOT / "fixtures" / "tls"
# Clients that must fail give up quickly.
FAILING_CLIENT_TIMEOUTS = {"serverSelectionTimeoutMS": 2_000, "connectTimeoutMS": 2_000}


@pytest.fixture(scope="module")
def tls_server():
    with tempfile.TemporaryDirectory(prefix="docgate-pytest-tls-") as tmp:
        srv = DocgateServer(
            Path(tmp),
            [
                "--tls-cert",
                str(CERTS / "server.pem"),
                "--tls-key",
                str(CERTS / "server.key"),
                "--tls-mode",
                "required",
            ],
        )
        srv.start()
        try:
            yield srv
        finally:
            srv.stop()


def test_tls_client_inserts_and_finds(tls_server):
    with tls_server.client(tls=True, tlsCAFile=str(CERTS / "ca.pem")) as client:
        items = client["tls_pymongo"]["items"]
        items.insert_one({"_id": 1, "over": "tls"})
        assert items.find_one({"_id": 1}) == {"_id": 1, "over": "tls"}


def test_required_refuses_a_plain_client(tls_server):
    with tls_server.client(**FAILING_CLIENT_TIMEOUTS) as client:
        with pytest.raises(ServerSelectionTimeoutError):
            client.admin.command("ping")


def test_a_client_trusting_another_ca_is_refused(tls_server):
    with tls_server.client(
        tls=True, tlsCAFile=str(CERTS / "untrusted-ca.pem"), **FAILING_CLIENT_TIMEOUTS
    ) as client:
        with pytest.raises(ServerSelectionTimeoutError):
            client.admin.command("ping")
    # The server is still up and serving trusted clients.
    with tls_server.client(tls=True, tlsCAFile=str(CERTS / "ca.pem")) as client:
        assert client.admin.command("ping")["ok"] == 1
