"""``/healthz/live`` and ``/healthz/ready``: JSON for machines, 503 when this process cannot work.

In process (both modes): what ready checks and how it says no (a migration not applied, a
stored secret this key cannot read). With a real app server (distributed pass): the database
refusing connections makes ready answer 503 at once, live still 200, and ready comes back.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from chat_app import readiness
from infra import secrets
from tests.conftest import TERMINATE_OTHER_CLIENTS
from tests.e2e.conftest import run_app_server
from tests.helpers import wait_for


def probe(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=15) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def shared_dirs_exist() -> None:
    # A process that joined the fleet made them; this test process did not join. Not the stdio
    # servers' venv: no process makes that one (tests/tools/mcp links it to a shared venv).
    for directory in (settings.WORKSPACES_DIR, settings.SKILLS_DIR):
        Path(directory).mkdir(parents=True, exist_ok=True)


@pytest.fixture
def migrations_read_again(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(readiness, "_migrations_applied", False)
    yield


@pytest.mark.modes
def test_it_answers_live_without_asking_anything(client):
    response = client.get("/healthz/live")
    assert response.status_code == 200
    assert response.json() == {"status": "live"}


@pytest.mark.modes
def test_it_answers_ready_with_each_check(client, transactional_db, shared_dirs_exist):
    response = client.get("/healthz/ready")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ready" and body["ok"] is True and body["reasons"] == []
    assert body["mode"] == settings.MODE
    for check in ("database", "migrations", "secrets", "channel_layer"):
        assert body[check]["ok"] is True, check
    if settings.MODE == "distributed":
        assert body["keys"]["ok"] is True
        assert body["shared_dirs"]["ok"] is True


@pytest.mark.modes
def test_it_is_not_ready_while_a_migration_is_not_applied(
    client, transactional_db, shared_dirs_exist, migrations_read_again
):
    from django.db.migrations.loader import MigrationLoader

    # The app's newest migration (what a new release brings before `migrate` ran).
    (latest,) = (n for a, n in MigrationLoader(None).graph.leaf_nodes() if a == "chat_app")
    applied = MigrationRecorder.Migration.objects.get(app="chat_app", name=latest)
    applied.delete()
    try:
        response = client.get("/healthz/ready")
    finally:
        MigrationRecorder(connection).record_applied("chat_app", latest)
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "not ready" and body["migrations"]["ok"] is False
    assert f"chat_app.{latest}" in body["migrations"]["error"]
    assert "manage.py migrate" in body["migrations"]["error"]
    assert "migrations: migrations not applied: 1 (first chat_app" in body["reasons"][0]
    assert body["database"]["ok"] is True


@pytest.mark.modes
def test_it_names_the_stored_secret_this_key_cannot_decrypt(
    client, transactional_db, shared_dirs_exist, settings
):
    from chat_app.models import Provider

    Provider.objects.create(name="stored", model="m", api_key="sk-stored-secret")
    assert client.get("/healthz/ready").status_code == 200
    settings.SECRETS_KEYS = [secrets.new_key()]  # another key than the one that stored it
    response = client.get("/healthz/ready")
    body = response.json()
    assert response.status_code == 503
    assert body["secrets"]["ok"] is False
    assert "chat_app.Provider.api_key" in body["secrets"]["error"]
    assert "cannot be decrypted" in body["secrets"]["error"]


def _postgres_admin(sql: str, params: tuple[str, ...] = ()) -> None:
    """Run ``sql`` on the server's maintenance database: the test database is the one that
    goes away."""
    import psycopg

    s = connection.settings_dict
    with psycopg.connect(
        dbname="postgres",
        user=s.get("USER") or None,
        password=s.get("PASSWORD") or None,
        host=s.get("HOST") or "127.0.0.1",
        port=s.get("PORT") or 5432,
        autocommit=True,
    ) as admin:
        admin.execute(sql, params)


@pytest.mark.distributed_only
def test_it_answers_503_json_while_the_database_refuses_connections(transactional_db):
    name = connection.settings_dict["NAME"]
    with run_app_server("--no-beat", log_name="test-ready-db.log") as url:
        status, body = wait_for(
            lambda: (r := probe(url + "/healthz/ready"))[0] == 200 and r,
            timeout=30,
            message="the server to be ready",
        )
        try:
            _postgres_admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            _postgres_admin(TERMINATE_OTHER_CLIENTS, (name,))
            status, body = probe(url + "/healthz/ready")
            assert status == 503, body
            assert body["status"] == "not ready" and body["database"]["ok"] is False
            assert any(reason.startswith("database: ") for reason in body["reasons"])
            assert probe(url + "/healthz/live") == (200, {"status": "live"})
        finally:
            _postgres_admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            connection.close()  # this process's was terminated too
        wait_for(
            lambda: probe(url + "/healthz/ready")[0] == 200,
            timeout=90,
            interval=1,
            message="the server to be ready again once the database takes connections",
        )
