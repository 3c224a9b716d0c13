"""An OpenAPI source whose API key is each person's own: entered on My connections
(write-only), sent only with that person's calls, never the shared key, scrubbed when the
API echoes it back (a real FastAPI app with its own generated document)."""

# No `from __future__ import annotations`: FastAPI reads the annotations at run time.
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from django.test import Client
from fastapi import FastAPI, Header, HTTPException

from tests.tools.calls import run_tool
from tests.tools.openapi.api_app import api_import, serve
from tools_app.connections.models import SourceConnection
from tools_app.connections.services import source_credentials_set
from tools_app.imported import imported_reset
from tools_app.models import ToolCall

KEYS = {"alice-key-5f2a9c7e": "alice", "bob-key-8d1e4b2a": "bob", "shared-key-0c3f6a": "shared"}


def make_app() -> FastAPI:
    app = FastAPI(title="Accounts", version="1.0")

    @app.get("/me", operation_id="who_am_i", summary="The account of the key")
    def me(x_api_key: Annotated[str | None, Header()] = None) -> dict[str, str]:
        if x_api_key not in KEYS:
            raise HTTPException(status_code=401, detail="bad or missing API key")
        return {"account": KEYS[x_api_key]}

    @app.get("/headers", operation_id="show_headers", summary="The key as received")
    def headers(x_api_key: Annotated[str | None, Header()] = None) -> dict[str, str]:
        return {"x-api-key": x_api_key or ""}

    return app


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with serve(make_app()) as url:
        yield url


@pytest.fixture
def source(api: str, transactional_db: None, staff_user: Any) -> Iterator[Any]:
    # The shared key is what "shared" would send: never per person.
    source = api_import(api, name="accounts", secret="shared-key-0c3f6a", user=staff_user)
    source_credentials_set(source=source, mode="person", user=staff_user)
    source.refresh_from_db()
    yield source
    imported_reset()


def run(user: Any, tool: str) -> ToolCall:
    return run_tool(tool, user=user)


def test_each_person_calls_with_their_own_key(source: Any, user: Any, other_user: Any) -> None:
    client = Client()
    client.force_login(user)
    page = client.get("/connections/").content.decode()
    assert "Your key (X-API-Key)" in page
    response = client.post(
        "/connections/accounts/key/", {"api_key": "alice-key-5f2a9c7e", "account": "alice@api"}
    )
    assert response.status_code == 302
    page = client.get("/connections/").content.decode()
    assert "alice@api" in page and "alice-key-5f2a9c7e" not in page
    mine = run(user, "who_am_i")
    assert mine.status == "succeeded", mine.result
    assert mine.result["json"] == {"account": "alice"} and mine.result["connection"] == "alice@api"
    # Bob never entered a key: the Connect refusal, not Alice's key and not the shared one.
    theirs = run(other_user, "who_am_i")
    assert theirs.policy_verdict == "not_connected"
    assert theirs.result["connect"] == {"source": "accounts", "label": "Accounts"}


def test_the_key_is_scrubbed_when_the_api_echoes_it(source: Any, user: Any) -> None:
    from tools_app.connections.services import api_key_set

    api_key_set(user=user, source=source, value="alice-key-5f2a9c7e")
    call = run(user, "show_headers")
    assert call.result["json"] == {"x-api-key": "***"}
    assert SourceConnection.objects.get(user=user).account == "key ending …9c7e"
    stored = [
        str(v) for v in ToolCall.objects.values_list("arguments", "result", "output", "error")
    ]
    assert not any("alice-key-5f2a9c7e" in s for s in stored)


def test_a_key_must_be_one_line(source: Any, user: Any) -> None:
    client = Client()
    client.force_login(user)
    client.post("/connections/accounts/key/", {"api_key": "a\r\nX-Evil: 1"})
    assert not SourceConnection.objects.filter(user=user).exists()
    assert "one line" in client.get("/connections/").content.decode()
