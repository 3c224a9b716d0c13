"""OpenAPI import against a real local API (FastAPI, its own generated 3.1 document): a path
parameter, a query parameter, a JSON body and an API key header, through the real path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.tools.calls import run_tool
from tests.tools.openapi.api_app import API_KEY, api_import, make_app, serve
from tools_app.executors.openapi.importer import openapi_fetch, openapi_preview
from tools_app.imported import imported_reset
from tools_app.models import AuditRecord, ToolCall, ToolSource
from tools_app.runtime import BindContext
from tools_app.selectors import tool_named
from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch
from tools_app.services.sources import SourceError, source_delete


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with serve(make_app()) as url:
        yield url


@pytest.fixture
def imported(api: str, transactional_db: None, staff_user: Any) -> Iterator[ToolSource]:
    yield api_import(api, name="inventory", secret=API_KEY, user=staff_user)
    imported_reset()


def run(user: Any, tool: str, arguments: dict[str, Any]) -> ToolCall:
    return run_tool(tool, user=user, **arguments)


def test_it_previews_every_operation_of_the_generated_document(api: str) -> None:
    text = openapi_fetch(f"{api}/openapi.json", document_private=True)
    preview = openapi_preview(text, document_url=f"{api}/openapi.json")
    assert preview.version.startswith("3.1") and preview.title == "Inventory"
    assert preview.base_url == api
    names = [op.name for op in preview.operations]
    assert names == ["get_item", "create_item", "search_items"]
    get_item = preview.operations[0]
    assert get_item.input_schema["required"][0] == "item_id"
    assert {p["in"] for p in get_item.params} == {"path", "query", "header"}


def test_fetching_a_loopback_document_needs_an_explicit_allowance(api: str) -> None:
    with pytest.raises(SourceError, match="not a public address"):
        openapi_fetch(f"{api}/openapi.json")


def test_it_calls_a_path_and_query_parameter_with_the_key_in_a_header(
    imported: ToolSource, user: Any
) -> None:
    call = run(user, "get_item", {"item_id": 1, "verbose": True})
    assert call.status == "succeeded", call.result
    assert call.result["status"] == 200
    assert call.result["json"]["name"] == "bolt"
    assert call.result["json"]["echo"] == {"item_id": 1, "verbose": True}
    assert "GET " in call.output and "/items/1?verbose=true" in call.output


def test_it_sends_a_json_body(imported: ToolSource, user: Any) -> None:
    call = run(user, "create_item", {"body": {"name": "nut", "qty": 3}})
    assert call.status == "succeeded", call.result
    assert call.result["json"]["name"] == "nut"
    found = run(user, "search_items", {"q": "nut"})
    assert found.result["json"] and found.result["json"][0]["qty"] == 3


def test_schema_errors_are_refused_at_binding_in_words(imported: ToolSource, user: Any) -> None:
    call = run(user, "get_item", {"item_id": "seven"})
    assert call.status == "failed"
    assert "'item_id'" in call.error and "integer" in call.error
    missing = run(user, "create_item", {"body": {"name": "x"}})
    assert missing.status == "failed" and "qty" in missing.error


def test_the_api_key_is_never_stored_outside_the_encrypted_field(
    imported: ToolSource, user: Any
) -> None:
    call = run(user, "get_item", {"item_id": 1})
    assert call.status == "succeeded"
    record = AuditRecord.objects.get(tool_call=call)
    dumped = json.dumps(
        [call.arguments, call.result, call.output, record.arguments, record.result, record.detail]
    )
    assert API_KEY not in dumped
    settings_records = AuditRecord.objects.filter(group=imported.group_name)
    assert API_KEY not in json.dumps([r.detail for r in settings_records])
    assert API_KEY not in json.dumps(imported.config)


def test_a_wrong_key_is_the_apis_own_refusal(imported: ToolSource, user: Any) -> None:
    from tools_app.services.sources import source_secrets_set

    source_secrets_set(imported, {"value": "wrong"})
    imported.save(update_fields=["secrets"])
    call = run(user, "get_item", {"item_id": 1})
    assert call.status == "failed"
    assert call.error == "the API answered 401"
    assert call.result["json"]["detail"] == "bad or missing API key"


def test_the_base_url_host_is_the_only_host_allowed(imported: ToolSource, user: Any) -> None:
    from tests.tools.conftest import configure

    configure(imported.group_name, base_url="http://169.254.169.254", allowed_hosts=["127.0.0.1"])
    call = run(user, "get_item", {"item_id": 1})
    assert call.status == "denied"
    assert "not in the allowed hosts" in call.error


def test_removing_the_source_removes_its_functions(imported: ToolSource, staff_user: Any) -> None:
    assert tool_named("get_item") is not None
    source_delete(imported, user=staff_user)
    assert tool_named("get_item") is None


@pytest.mark.modes
def test_a_worker_process_sees_functions_imported_a_moment_ago(
    imported: ToolSource, user: Any, worker: str
) -> None:
    from tests.helpers import wait_for

    call = toolcall_bind(
        request=CallRequest(tool="search_items", arguments={"q": "bolt"}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )
    toolcall_dispatch(call)
    done = wait_for(
        lambda: ToolCall.objects.filter(pk=call.pk, status__in=ToolCall.TERMINAL).first(),
        timeout=20,
        message="the imported call to finish on a worker",
    )
    assert done.status == "succeeded", done.result
    assert done.result["json"][0]["name"] == "bolt"
