"""OpenAPI ``$ref`` fan-out (issue 20, finding 8): a schema that references the next one twice,
level after level, was inlined 2**levels times: a 2.6 KB document took 8.7 s and became a
17 MB schema, in the web request that previews it. Inlining now works within a budget;
past it a reference is left unexpanded, and says so."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tools_app.executors.openapi.importer import openapi_import, openapi_preview
from tools_app.executors.openapi.spec import MAX_DOCUMENT_EXPANSION, MAX_ITEM_EXPANSION
from tools_app.imported import imported_reset
from tools_app.models import ToolSource

LEVELS = 18  # 2.6 KB; the unbounded inlining made 2**18 copies of the last schema
# A JSON entry of these schemas takes well under 100 characters.
ITEM_CHARS = MAX_ITEM_EXPANSION * 100


def fan_out(levels: int = LEVELS, paths: int = 1) -> str:
    schemas: dict[str, Any] = {
        f"S{i}": {
            "type": "object",
            "properties": {
                "a": {"$ref": f"#/components/schemas/S{i + 1}"},
                "b": {"$ref": f"#/components/schemas/S{i + 1}"},
            },
        }
        for i in range(levels)
    }
    schemas[f"S{levels}"] = {"type": "string"}
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}
    return json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "Fan-out", "version": "1"},
            "servers": [{"url": "https://api.example.com"}],
            "paths": {
                f"/p{n}": {
                    "post": {
                        "operationId": f"op{n}",
                        "requestBody": body,
                        "responses": {"200": {"description": "ok"}},
                    }
                }
                for n in range(paths)
            },
            "components": {"schemas": schemas},
        }
    )


def test_it_bounds_the_schema_a_fanned_out_ref_expands_to() -> None:
    text = fan_out()
    assert len(text) < 3_000

    [op] = openapi_preview(text).operations

    schema = json.dumps(op.input_schema)
    assert len(schema) < ITEM_CHARS, len(schema)
    assert "(not expanded: too large)" in schema
    # what fits is expanded as before
    body = op.input_schema["properties"]["body"]
    assert body["properties"]["a"]["properties"]["b"]["type"] == "object"


def test_it_bounds_every_level_of_a_deeper_document() -> None:
    [op] = openapi_preview(fan_out(levels=40)).operations

    assert len(json.dumps(op.input_schema)) < ITEM_CHARS


def test_it_bounds_the_whole_document_across_paths() -> None:
    """Each path item has its budget, and the document one for all of them."""
    paths = 3 * MAX_DOCUMENT_EXPANSION // MAX_ITEM_EXPANSION
    ops = openapi_preview(fan_out(paths=paths)).operations

    assert len(ops) == paths
    total = sum(len(json.dumps(op.input_schema)) for op in ops)
    assert total < (MAX_DOCUMENT_EXPANSION + paths * 100) * 100, total
    last = ops[-1].input_schema["properties"]["body"]
    assert last["description"] == "S0 (not expanded: too large)", last


def test_the_preview_page_and_the_import_stay_bounded(staff_user: Any) -> None:
    client = Client()
    client.force_login(staff_user)
    upload = SimpleUploadedFile("fan.json", fan_out().encode())

    page = client.post(
        "/tools/sources/openapi/new/", {"step": "preview", "name": "fan", "document": upload}
    )

    assert page.status_code == 200
    assert "op0" in page.content.decode()
    try:
        source = openapi_import(name="fan", text=fan_out(), user=staff_user)
        assert len(json.dumps(source.functions)) < ITEM_CHARS
        assert ToolSource.objects.filter(name="fan").exists()
    finally:
        imported_reset()
