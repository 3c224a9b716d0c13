"""The SSRF guard's exceptions (issue 20, finding 8).

- An admin's IP or CIDR entry in ``private_allowed`` was checked before the metadata ranges,
  so naming the address (or a range holding it) opened the cloud metadata service; now no
  entry does, whatever the spelling.
- The OpenAPI import's one "private" switch allowed the document's host and also whatever
  API host the document named. The document's host and the API's are now two decisions.

Real servers on loopback addresses; the metadata addresses are refused before any
connection, so none is made."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.tools.calls import run_tool
from tests.tools.http.conftest import fake_dns  # noqa: F401  (fixture)
from tests.tools.research.servers import Hit, Response, Server, serving
from tools_app.errors import PolicyDenied
from tools_app.executors.http.client import fetch
from tools_app.executors.openapi.importer import openapi_fetch, openapi_import
from tools_app.imported import imported_reset
from tools_app.models import ToolCall, ToolGroupConfig, ToolSource
from tools_app.netguard import check_url
from tools_app.services.sources import SourceError

DOCUMENT_HOST = "127.0.0.32"
API_HOST = "127.0.0.33"
OPERATION = {"operationId": "read_secret", "responses": {"200": {"description": "ok"}}}


@pytest.mark.parametrize(
    ("url", "entries"),
    [
        ("http://169.254.169.254/latest/meta-data/", ["169.254.169.254"]),
        ("http://169.254.169.254/latest/meta-data/", ["169.254.0.0/16"]),
        ("http://169.254.169.254/latest/meta-data/", ["0.0.0.0/0"]),
        ("http://169.254.170.2/v2/credentials", ["169.254.170.2/32"]),
        ("http://100.100.100.200/latest/meta-data/", ["100.100.100.200", "100.64.0.0/10"]),
        ("http://168.63.129.16/machine", ["168.63.129.16"]),
        ("http://[fd00:ec2::254]/latest/meta-data/", ["fd00:ec2::254"]),
        ("http://[fd00:ec2::254]/latest/meta-data/", ["fc00::/7", "::/0"]),
        ("http://[::ffff:169.254.169.254]/", ["::/0", "::ffff:169.254.169.254"]),
        ("http://[64:ff9b::a9fe:a9fe]/", ["64:ff9b::/96"]),
        ("http://[2002:a9fe:a9fe::]/", ["2002::/16"]),
    ],
)
def test_no_entry_opens_a_metadata_address(url: str, entries: list[str]) -> None:
    with pytest.raises(PolicyDenied, match="cloud metadata; never allowed"):
        check_url(url, private_allowed=entries)
    with pytest.raises(PolicyDenied, match="cloud metadata; never allowed"):
        fetch("GET", url, timeout=5, private_allowed=entries)


def test_no_entry_opens_a_name_resolving_to_metadata(
    fake_dns: dict[str, list[str]],  # noqa: F811
) -> None:
    fake_dns["metadata.internal"] = ["169.254.169.254"]
    for entries in (["metadata.internal"], ["169.254.169.254"], ["*.internal", "0.0.0.0/0"]):
        with pytest.raises(PolicyDenied, match="cloud metadata; never allowed"):
            check_url("http://metadata.internal/", private_allowed=entries)


def test_entries_still_open_the_private_addresses_they_name() -> None:
    assert check_url("http://10.1.2.3/", private_allowed=["0.0.0.0/0"]).address == "10.1.2.3"
    assert check_url("http://169.254.1.1/", private_allowed=["169.254.0.0/16"]).port == 80
    assert check_url("http://[fd00::1]/", private_allowed=["fc00::/7"]).host == "fd00::1"


def test_http_request_cannot_reach_metadata_an_admin_listed(user: Any) -> None:
    ToolGroupConfig.objects.update_or_create(
        name="http", defaults={"settings": {"private_allowed": ["169.254.169.254"]}}
    )
    call = run_tool("http_request", user=user, url="http://169.254.169.254/latest/meta-data/")

    assert call.status == ToolCall.Status.DENIED
    assert "cloud metadata; never allowed" in call.error, call.error


# -- OpenAPI: the document's host and the API's host ----------------------------------------


def _document(hit: Hit, server: Server) -> Response:
    """A document on a private host naming an API on another private host."""
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Internal", "version": "1"},
        "servers": [{"url": server.redirect_to}],
        "paths": {"/secret": {"get": OPERATION}},
    }
    return 200, [("Content-Type", "application/json")], json.dumps(doc).encode()


def _secret(hit: Hit, server: Server) -> Response:
    return 200, [("Content-Type", "application/json")], b'{"secret": "internal"}'


@pytest.fixture
def hosts() -> Iterator[tuple[Server, Server]]:
    with (
        serving(API_HOST, {("GET", "/secret"): _secret}) as api,
        serving(DOCUMENT_HOST, {("GET", "/openapi.json"): _document}) as docs,
    ):
        docs.redirect_to = api.url("")
        yield docs, api
    imported_reset()


def _call(user: Any) -> ToolCall:
    return run_tool("read_secret", user=user)


def test_allowing_the_documents_host_does_not_allow_the_apis(
    hosts: tuple[Server, Server], staff_user: Any, user: Any
) -> None:
    docs, api = hosts
    text = openapi_fetch(docs.url("/openapi.json"), document_private=True)
    source = openapi_import(
        name="internal", text=text, document_url=docs.url("/openapi.json"), user=staff_user
    )

    call = _call(user)

    assert ToolGroupConfig.objects.get(name=source.group_name).settings["private_allowed"] == []
    assert call.status == ToolCall.Status.DENIED, call.result
    assert "not a public address" in call.error
    assert api.paths() == []


def test_the_apis_host_is_allowed_on_its_own(
    hosts: tuple[Server, Server], staff_user: Any, user: Any
) -> None:
    docs, api = hosts
    text = openapi_fetch(docs.url("/openapi.json"), document_private=True)
    openapi_import(name="internal", text=text, api_private=True, user=staff_user)

    call = _call(user)

    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["json"] == {"secret": "internal"}
    assert api.paths() == ["/secret"]


def test_the_pages_ask_for_each_host_apart(
    hosts: tuple[Server, Server], staff_user: Any, user: Any
) -> None:
    docs, api = hosts
    client = Client()
    client.force_login(staff_user)
    preview = client.post(
        "/tools/sources/openapi/new/",
        {
            "step": "preview",
            "name": "internal",
            "document_url": docs.url("/openapi.json"),
            "document_private": "on",
        },
    )
    page = preview.content.decode()
    assert preview.status_code == 200 and "read_secret" in page, page
    assert 'name="api_private"' in page and "The API is on a private" in page
    form = {
        "step": "import",
        "name": "internal",
        "document_url": docs.url("/openapi.json"),
        "document_text": _hidden(page, "document_text"),
        "operations": ["read_secret"],
        "base_url": api.url(""),
        "auth_type": "none",
        "auth_in": "header",
    }
    # a field of the old single switch is not taken for the API's
    client.post("/tools/sources/openapi/new/", {**form, "allow_private": "True"})

    source = ToolSource.objects.get(name="internal")
    assert ToolGroupConfig.objects.get(name=source.group_name).settings["private_allowed"] == []
    assert _call(user).status == ToolCall.Status.DENIED
    assert api.paths() == []


def test_neither_switch_opens_a_metadata_address(staff_user: Any, user: Any) -> None:
    with pytest.raises(SourceError, match="cloud metadata; never allowed"):
        openapi_fetch("http://169.254.169.254/openapi.json", document_private=True)
    text = json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "Metadata", "version": "1"},
            "servers": [{"url": "http://169.254.169.254"}],
            "paths": {"/latest/meta-data/": {"get": OPERATION}},
        }
    )
    try:
        openapi_import(name="metadata", text=text, api_private=True, user=staff_user)
        call = _call(user)
    finally:
        imported_reset()

    assert call.status == ToolCall.Status.DENIED
    assert "cloud metadata; never allowed" in call.error, call.error


def test_the_command_keeps_its_old_switch_for_both(
    hosts: tuple[Server, Server], staff_user: Any
) -> None:
    docs, api = hosts
    url = docs.url("/openapi.json")
    out = io.StringIO()
    call_command("openapi_import", "doc-only", url, "--document-private", stdout=out)
    call_command("openapi_import", "both", url, "--allow-private", stdout=out)

    private = {
        name: ToolGroupConfig.objects.get(
            name=ToolSource.objects.get(name=name).group_name
        ).settings["private_allowed"]
        for name in ("doc-only", "both")
    }
    assert private == {"doc-only": [], "both": [API_HOST]}
    with pytest.raises(CommandError, match="not a public address"):
        call_command("openapi_import", "neither", url, stdout=out)


def _hidden(page: str, name: str) -> str:
    import html
    import re

    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"the page carries {name}"
    return html.unescape(match.group(1))
