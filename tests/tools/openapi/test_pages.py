"""The Import OpenAPI pages: preview the operations, choose, import; credentials write-only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from tests.tools.openapi.api_app import API_KEY, make_app, serve
from tools_app.imported import imported_reset
from tools_app.models import ToolSource


@pytest.fixture
def api() -> Iterator[str]:
    with serve(make_app()) as url:
        yield url
    imported_reset()


def test_an_admin_previews_chooses_and_imports(api: str, staff_user: Any) -> None:
    client = Client()
    client.force_login(staff_user)
    preview = client.post(
        "/tools/sources/openapi/new/",
        {
            "step": "preview",
            "name": "inv",
            "document_url": f"{api}/openapi.json",
            "document_private": "on",
        },
    )
    page = preview.content.decode()
    assert preview.status_code == 200
    assert "GET /items/{item_id}" in page and "create_item" in page and "Inventory" in page
    form = {
        "step": "import",
        "name": "inv",
        "label": "Inventory",
        "document_url": f"{api}/openapi.json",
        "document_text": _document(page),
        "api_private": "on",
        "operations": ["get_item", "search_items"],
        "base_url": "",
        "auth_type": "api_key",
        "auth_in": "header",
        "auth_name": "X-API-Key",
        "username": "",
        "secret": API_KEY,
    }
    done = client.post("/tools/sources/openapi/new/", form, follow=True)
    assert done.status_code == 200
    source = ToolSource.objects.get(name="inv")
    assert [f["name"] for f in source.functions] == ["get_item", "search_items"]
    assert API_KEY not in done.content.decode()
    manager = client.get("/tools/").content.decode()
    assert "group-openapi_inv" in manager and API_KEY not in manager


def test_a_document_that_is_not_openapi_is_refused_in_words(staff_user: Any, tmp_path: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = Client()
    client.force_login(staff_user)
    upload = SimpleUploadedFile("spec.json", b'{"swagger": "2.0", "paths": {}}')
    page = client.post(
        "/tools/sources/openapi/new/", {"step": "preview", "name": "old", "document": upload}
    ).content.decode()
    assert "only OpenAPI 3.0/3.1 documents can be imported" in page


def _document(page: str) -> str:
    import html
    import re

    match = re.search(r'name="document_text" value="([^"]*)"', page)
    assert match, "the preview carries the document"
    return html.unescape(match.group(1))
