"""An MCP server over streamable HTTP, started in the test: registration through the SSRF
guard, discovery, calls through the real path, results, headers kept secret, Stop."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.tools.mcp.conftest import wait_call
from tests.tools.mcp.servers import Observed
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.models import AuditRecord, ToolCall
from tools_app.runtime import BindContext
from tools_app.selectors import tool_named
from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch
from tools_app.services.execution import toolcall_cancel, toolcall_execute
from tools_app.services.sources import SourceError

TOKEN = "mcp-secret-token-81b3"


@pytest.fixture
def server(mcp_http: tuple[str, Observed], transactional_db: None, staff_user: Any) -> Any:
    url, observed = mcp_http
    source = mcp_server_add(
        name="testtools",
        url=url,
        bearer=TOKEN,
        headers={"X-Tenant": "blue"},
        allow_private=True,
        user=staff_user,
    )
    mcp_refresh(source)
    source.refresh_from_db()
    return source, observed


def run(user: Any, tool: str, arguments: dict[str, Any]) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
    call.refresh_from_db()
    return call


def test_it_refuses_a_loopback_url_unless_allowed(
    mcp_http: tuple[str, Observed], transactional_db: None
) -> None:
    with pytest.raises(SourceError, match="not a public address"):
        mcp_server_add(name="sneaky", url=mcp_http[0])
    with pytest.raises(SourceError, match="not in the allowed hosts"):
        mcp_server_add(
            name="other", url=mcp_http[0], allow_private=True, settings={"allowed_hosts": ["x.org"]}
        )


def test_it_discovers_the_tools_as_a_group(server: Any) -> None:
    source, _ = server
    assert source.state == "up" and source.tool_count == 6
    assert {f["name"] for f in source.functions} == {
        "echo",
        "slow",
        "picture",
        "broken",
        "grow",
        "hang",
    }
    echo = tool_named("echo")
    assert echo is not None and echo.tool_group == "mcp_testtools"
    schema = echo.openai_schema()["function"]
    assert schema["strict"] is True
    assert schema["parameters"]["required"] == ["text", "upper"]  # strict: all listed
    assert schema["parameters"]["additionalProperties"] is False


def test_a_call_goes_through_binding_and_returns_the_text(server: Any, user: Any) -> None:
    call = run(user, "echo", {"text": "hello", "upper": True})
    assert call.status == "succeeded", call.result
    assert call.result["text"] == "HELLO"
    assert call.group == "mcp_testtools"
    assert AuditRecord.objects.filter(tool_call=call, status="succeeded").exists()


def test_a_long_result_is_cut_at_the_groups_limit_with_a_marker(server: Any, user: Any) -> None:
    # Seed 004: mcp_context_limit, 15,000 characters by default.
    call = run(user, "echo", {"text": "ж" * 20_000})
    assert call.status == "succeeded", call.result
    assert call.result["text"] == "ж" * 15_000 + "\n[truncated, 5,000 more characters]"
    assert call.result["truncated"] is True and "15,000" in call.result["notice"]
    assert "structured" not in call.result  # no room left: the model reads the text once
    from tools_app.models import ToolGroupConfig

    config = ToolGroupConfig.objects.get(name="mcp_testtools")
    config.settings = {**config.settings, "max_result_chars": 50_000}
    config.save()
    whole = run(user, "echo", {"text": "ж" * 20_000})
    assert whole.status == "succeeded", whole.result
    assert whole.result["text"] == "ж" * 20_000 and "truncated" not in whole.result


def test_null_for_an_optional_argument_means_not_given(server: Any, user: Any) -> None:
    call = run(user, "echo", {"text": "quiet", "upper": None})
    assert call.status == "succeeded", call.result
    assert call.result["text"] == "quiet"


def test_schema_violations_are_refused_before_the_server_sees_them(server: Any, user: Any) -> None:
    call = run(user, "echo", {"upper": True})
    assert call.status == "failed"
    assert "'text' is required" in call.error


def test_headers_and_bearer_reach_the_server_and_nothing_else(server: Any, user: Any) -> None:
    source, observed = server
    run(user, "echo", {"text": "x"})
    assert any(h.get("authorization") == f"Bearer {TOKEN}" for h in observed.headers)
    assert any(h.get("x-tenant") == "blue" for h in observed.headers)
    everything = json.dumps(
        [source.config, [r.detail for r in AuditRecord.objects.all()]]
        + [[c.arguments, c.result, c.output] for c in ToolCall.objects.all()]
    )
    assert TOKEN not in everything


def test_images_and_resources_render_in_the_card(server: Any, user: Any) -> None:
    from tools_app.events import render_toolcall_card

    call = run(user, "picture", {})
    assert call.status == "succeeded", call.result
    assert call.result["text"] == "a red picture"
    image = call.result["images"][0]
    assert image["mime_type"] == "image/png" and image["url"].startswith("/media/screenshots/")
    resource = [p for p in call.result["content"] if p["type"] == "resource"][0]
    assert resource["text"] == "3 by 2 pixels"
    html = render_toolcall_card(call)
    assert f'src="{image["url"]}"' in html


def test_a_tool_error_is_a_failed_call_with_the_servers_words(server: Any, user: Any) -> None:
    call = run(user, "broken", {})
    assert call.status == "failed"
    assert "broken on purpose" in call.error


def test_the_state_shows_down_with_the_error_when_the_server_is_gone(
    transactional_db: None, staff_user: Any
) -> None:
    from tests.tools.mcp.servers import serve_mcp

    with serve_mcp() as (url, _):
        source = mcp_server_add(name="gone", url=url, allow_private=True, user=staff_user)
    with pytest.raises(SourceError):
        mcp_refresh(source)
    source.refresh_from_db()
    assert source.state == "down" and source.last_error


@pytest.mark.modes
def test_stop_sends_cancelled_to_the_server_and_marks_the_call_cancelled(
    server: Any, user: Any, worker: str
) -> None:
    from tests.helpers import wait_for

    _, observed = server
    call = toolcall_bind(
        request=CallRequest(tool="slow", arguments={"seconds": 30}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )
    toolcall_dispatch(call)
    assert observed.slow_started.wait(30), "the slow tool never started"
    wait_for(
        lambda: "progress" in ToolCall.objects.get(pk=call.pk).output,
        timeout=10,
        message="progress notifications on the card",
    )
    toolcall_cancel(ToolCall.objects.get(pk=call.pk))
    done = wait_call(call.pk, timeout=15)
    assert done.status == "cancelled"
    assert observed.slow_cancelled.wait(10), "the server never heard notifications/cancelled"
    assert not observed.slow_finished.is_set()


def test_a_server_announcing_new_tools_is_listed_again(
    server: Any, user: Any, staff_user: Any
) -> None:
    from tests.helpers import wait_for
    from tools_app.services.pins import pending, source_review_decide

    source, _ = server
    call = run(user, "grow", {"name": "sprout"})
    assert call.status == "succeeded", call.result

    def listed() -> bool:
        source.refresh_from_db()
        return "sprout" in {e["name"] for e in pending(source)}

    # Listed again at once; the new tool waits for an admin (tools_app.services.pins).
    wait_for(listed, timeout=15, message="tools/list_changed to bring in the new tool")
    refused = run(user, "sprout", {"text": "hi"})
    assert refused.status == "denied" and "waiting for an admin's review" in refused.error
    source_review_decide(source, remote="sprout", accept=True, user=staff_user)
    grown = run(user, "sprout", {"text": "hi"})
    assert grown.status == "succeeded", grown.result
    assert grown.result["text"] == "sprout: hi"


def test_an_sse_server_works_too(transactional_db: None, staff_user: Any, user: Any) -> None:
    from tests.tools.mcp.servers import serve_mcp
    from tools_app.executors.mcp.runtime import runtime

    with serve_mcp(sse=True) as (url, _):
        source = mcp_server_add(
            name="old-sse", url=url, transport="sse", allow_private=True, user=staff_user
        )
        names = mcp_refresh(source)
        assert "echo" in names
        call = run(user, "echo", {"text": "over sse"})
        assert call.status == "succeeded", call.result
        assert call.result["text"] == "over sse"
        runtime().close_all(timeout=5)


def test_a_crashing_stdio_server_is_down_with_its_stderr_and_backs_off(
    transactional_db: None, staff_user: Any
) -> None:
    from tests.tools.conftest import require_backend
    from tools_app.errors import ToolError
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.executors.mcp.services import server_spec

    require_backend("bubblewrap")
    source = mcp_server_add(
        name="crashy",
        command=["sh", "-c", "echo boom-on-start >&2; exit 3"],
        settings={"sandbox_backend": "bubblewrap"},
        user=staff_user,
    )
    with pytest.raises(SourceError, match="could not be started"):
        mcp_refresh(source)
    source.refresh_from_db()
    assert source.state == "down" and "boom-on-start" in source.last_error
    rt = runtime()
    spec = server_spec(source)
    # No restart in a tight loop: at once it says when; after the backoff it tries again,
    # and the next wait is longer.
    with pytest.raises(ToolError, match="next restart attempt is in 1 s"):
        rt.run(lambda: rt.list_tools(spec), timeout=30)
    time.sleep(1.2)
    with pytest.raises(ToolError, match="could not be started.*boom-on-start"):
        rt.run(lambda: rt.list_tools(spec), timeout=30)
    with pytest.raises(ToolError, match="next restart attempt is in 2 s"):
        rt.run(lambda: rt.list_tools(spec), timeout=30)


def test_a_hung_server_times_out_and_is_marked_down(server: Any, user: Any) -> None:
    from tests.helpers import wait_for
    from tools_app.models import ToolFunctionConfig

    source, _ = server
    ToolFunctionConfig.objects.create(name="hang", timeout_seconds=1)
    call = run(user, "hang", {"seconds": 9})
    assert call.status == "failed" and call.error == "timed out after 1 s"

    def down() -> bool:
        source.refresh_from_db()
        return source.state == "down"

    wait_for(down, timeout=15, message="the hung server to be marked down")
    assert "stopped answering" in source.last_error


def test_a_sessions_up_report_does_not_end_a_refresh_before_its_tools_are_stored(
    mcp_http: tuple[str, Observed], transactional_db: None, staff_user: Any, monkeypatch: Any
) -> None:
    """The Tools Manager polls a group while its source reads "refreshing" and stops at the
    first other state: the session's own "up" (written from a pool thread when it connects)
    must not land before the refresh has stored the tools."""
    from tools_app.executors.mcp import services
    from tools_app.models import ToolSource

    source = mcp_server_add(name="racy", url=mcp_http[0], allow_private=True, user=staff_user)
    seen: list[str] = []
    store = services.source_listing_apply

    def store_after_the_report(src: ToolSource, functions: list[dict[str, Any]], **kw: Any) -> Any:
        deadline = time.monotonic() + 1.5  # the report runs on a pool thread: give it time
        while time.monotonic() < deadline:
            state = ToolSource.objects.get(pk=src.pk).state
            if state != "refreshing":
                break
            time.sleep(0.05)
        seen.append(state)
        return store(src, functions, **kw)

    monkeypatch.setattr(services, "source_listing_apply", store_after_the_report)
    mcp_refresh(source)
    source.refresh_from_db()
    assert seen == ["refreshing"]
    assert source.state == "up" and source.tool_count == 6


def test_a_refresh_that_died_long_ago_gives_way_to_a_sessions_report(
    mcp_http: tuple[str, Observed], transactional_db: None
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tools_app.executors.mcp.services import REFRESH_LONGEST, mcp_state_record
    from tools_app.models import ToolSource

    source = mcp_server_add(name="elsewhere", url=mcp_http[0], allow_private=True)
    ToolSource.objects.filter(pk=source.pk).update(state="refreshing", state_at=timezone.now())
    mcp_state_record("elsewhere", "up", "")
    assert ToolSource.objects.get(pk=source.pk).state == "refreshing"
    stale = timezone.now() - REFRESH_LONGEST - timedelta(seconds=1)
    ToolSource.objects.filter(pk=source.pk).update(state_at=stale)
    mcp_state_record("elsewhere", "down", "connection refused")
    source.refresh_from_db()
    assert source.state == "down" and source.last_error == "connection refused"
