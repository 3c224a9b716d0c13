"""The Test button: a real call through binding, the queue and a worker, audited as a test."""

from __future__ import annotations

import pytest

from tests.helpers import wait_for
from tests.tools_manager.conftest import HTMX
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig

URL = "/tools/functions/current_time/test/"


def finished(call_id: int) -> ToolCall:
    return wait_for(
        lambda: (
            ToolCall.objects.filter(pk=call_id).exclude(status__in=["queued", "running"]).first()
        ),
        timeout=15,
        message=f"tool call {call_id} to finish",
    )


def test_the_form_is_prefilled_with_the_example(staff_client):
    html = staff_client.get(URL).content.decode()
    assert 'name="arg-timezone"' in html and 'value="Europe/Berlin"' in html
    assert "Raw JSON arguments" in html and "Run test" in html


@pytest.mark.modes
def test_a_test_run_goes_through_the_real_path_and_is_audited(worker, staff_client, staff_user):
    response = staff_client.post(URL, {"arg-timezone": "Asia/Tokyo"}, **HTMX)
    assert response.status_code == 200
    call = ToolCall.objects.get()
    html = response.content.decode()
    assert f'data-toolcall-stream="{call.pk}"' in html and f'id="toolcall-{call.pk}"' in html
    assert (call.source, call.user_id, call.conversation_id) == ("test", staff_user.pk, None)
    call = finished(call.pk)
    assert call.status == "succeeded" and call.result["timezone"] == "Asia/Tokyo"
    assert call.worker  # a worker ran it
    record = wait_for(
        lambda: AuditRecord.objects.filter(kind="call", tool_call=call, status="succeeded").first()
    )
    assert (record.source, record.username, record.arguments) == (
        "test",
        "root",
        {"timezone": "Asia/Tokyo"},
    )


def test_invalid_arguments_come_back_as_a_refused_card_at_once(staff_client):
    response = staff_client.post(URL, {"arg-timezone": "Mars/Olympus"}, **HTMX)
    call = ToolCall.objects.get()
    assert call.status == "failed" and "unknown timezone 'Mars/Olympus'" in call.error
    html = response.content.decode()
    assert "status-failed" in html and "unknown timezone" in html
    assert AuditRecord.objects.get(kind="call").status == "failed"


def test_raw_json_is_bound_exactly_as_a_model_would_send_it(staff_client):
    staff_client.post(URL, {"arg-timezone": "UTC", "arg-raw_json__": '{"timezone": '}, **HTMX)
    call = ToolCall.objects.get()
    assert call.status == "failed"
    assert call.error.startswith("arguments for current_time are not valid JSON")


def test_a_function_that_requires_approval_waits_with_approve_buttons(staff_client):
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    html = staff_client.post(URL, {"arg-timezone": "UTC"}, **HTMX).content.decode()
    assert ToolCall.objects.get().status == "awaiting_approval"
    assert 'data-action="approve"' in html and 'data-action="deny"' in html


def test_without_htmx_a_run_redirects_to_the_page_showing_its_card(staff_client):
    response = staff_client.post(URL, {"arg-timezone": "Mars/Olympus"})
    call = ToolCall.objects.get()
    assert response.status_code == 302 and response.url == f"{URL}?call={call.pk}"
    html = staff_client.get(response.url).content.decode()
    assert f'id="toolcall-{call.pk}"' in html and "unknown timezone" in html


@pytest.fixture
def counting_tool():
    """A test-only function with an integer argument, registered only for this test (a class
    defined at module level would stay in the registry for the whole session)."""
    from pydantic import Field

    from tools_app.registry import BaseTool, unregister_tool

    class CountSheep(BaseTool, group="time"):
        """Count sheep (test only)."""

        count: int = Field(3, ge=1, le=10, description="How many.")

    yield CountSheep
    unregister_tool("count_sheep")


def test_an_unparsable_field_is_an_inline_error_not_a_call(staff_client, counting_tool):
    response = staff_client.post(
        "/tools/functions/count_sheep/test/", {"arg-count": "many"}, **HTMX
    )
    assert response["HX-Retarget"] == "#test-form" and response["HX-Reswap"] == "outerHTML"
    html = response.content.decode()
    assert "Enter a whole number." in html and 'value="many"' in html
    assert not ToolCall.objects.exists()


def test_a_value_out_of_range_is_refused_by_binding_like_a_model_call(staff_client, counting_tool):
    staff_client.post("/tools/functions/count_sheep/test/", {"arg-count": "99"}, **HTMX)
    call = ToolCall.objects.get()
    assert call.status == "failed"
    assert (
        call.error == "invalid arguments for count_sheep: 'count': "
        "Input should be less than or equal to 10"
    )
