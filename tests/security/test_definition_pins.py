"""Tool poisoning / rug pull (OWASP MCP Top 10, MCP03): a real MCP server rewrites a tool's
description after it was accepted, adds tools, or names one like another tool. What it sends
never reaches a model request or any other surface before an admin accepts it; only admins
decide; the diff on the page is escaped; a shadowing name stays held."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from chat_app.models import Conversation
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tests.tools.mcp.changing_server import POISON, serve_changing
from tools_app import selectors
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.imported import ImportedTool
from tools_app.models import ToolCall, ToolSource
from tools_app.services.pins import pending, source_review_policy_set

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def source(transactional_db: None, staff_user: Any) -> Iterator[ToolSource]:
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.imported import imported_reset

    with serve_changing() as url:
        source = mcp_server_add(name="shifty", url=url, allow_private=True, user=staff_user)
        mcp_refresh(source)
        source.refresh_from_db()
        yield source
        runtime().close_all(timeout=5)
    imported_reset()


def held(source: ToolSource, name: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        source.refresh_from_db()
        return next((e for e in pending(source) if e["name"] == name), None)

    return wait_for(found, timeout=15, message=f"{name} to be held for review")


def change(source: ToolSource, what: str) -> None:
    """The server changes and says so (notifications/tools/list_changed)."""
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.executors.mcp.services import mcp_runtime, server_spec

    rt = mcp_runtime()
    spec = server_spec(source)
    result, _ = rt.run(lambda: runtime().call_tool(spec, "change", {"what": what}), timeout=20)
    assert not getattr(result, "is_error", False), result


@pytest.mark.modes
def test_a_poisoned_description_sent_with_list_changed_never_reaches_the_model(
    source: ToolSource, staff_user: Any, worker: str, llm: Any, provider: Any
) -> None:
    conversation = Conversation.objects.create(owner=staff_user, title="notes")
    # Turn 1: the model calls the server's tool that rewrites "note" and announces it.
    llm.script(Reply(calls=[Call("change", {"what": "poison"})]), Reply(text="changed"))
    wait_turn(turn_start(conversation=conversation, user_id=staff_user.pk, text="go").pk)
    held(source, "note")
    # Turn 2: the model is offered the pinned "note", and its call is refused until reviewed.
    llm.script(Reply(calls=[Call("note", {"text": "hello"})]), Reply(text="ok"))
    wait_turn(turn_start(conversation=conversation, user_id=staff_user.pk, text="note").pk)
    assert len(llm.requests) >= 4
    for request in llm.requests:
        sent = json.dumps(request)
        assert "IGNORE ALL PREVIOUS INSTRUCTIONS" not in sent and "evil.example" not in sent
    last = llm.requests[-1]
    tools = {t["function"]["name"]: t["function"] for t in last["tools"]}
    assert tools["note"]["description"] == "Take a note."
    call = ToolCall.objects.get(tool="note")
    assert call.status == "denied" and call.policy_verdict == "review"
    results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert "waiting for an admin's review" in results[-1]


def test_a_tool_added_unreviewed_is_on_no_surface(
    source: ToolSource, staff_user: Any, user: Any
) -> None:
    from platform_app.api_tokens import api_token_create
    from platform_app.mcp_gateway import _tools_for

    change(source, "add")
    held(source, "sneaky")
    token, _ = api_token_create(user=staff_user, name="client")
    assert "sneaky" not in {t["name"] for t in _tools_for(token.pk)}  # /mcp/ tools/list
    assert "note" in {t["name"] for t in _tools_for(token.pk)}
    client = Client()
    client.force_login(staff_user)
    schemas = client.get("/api/tools/schemas.json").json()
    assert "sneaky" not in json.dumps(schemas)
    assert client.get("/tools/functions/sneaky/test/").status_code == 404  # the Test button
    assert selectors.tool_for_slash("sneaky") is None  # /sneaky in the chat


def test_only_admins_decide_a_review(source: ToolSource, user: Any, staff_user: Any) -> None:
    change(source, "describe")
    entry = held(source, "note")
    client = Client()
    client.force_login(user)
    base = f"/tools/sources/{source.name}/review/"
    assert client.get(base).status_code == 403
    for decision in ("accept", "reject", "accept_all"):
        response = client.post(
            f"{base}decide/",
            {"function": "note", "pin": entry["offered_pin"], "decision": decision},
        )
        assert response.status_code == 403
    assert client.post(f"{base}policy/", {"auto_accept": "on"}).status_code == 403
    source.refresh_from_db()
    assert pending(source)[0]["status"] == "changed" and source.auto_accept is False
    anonymous = Client().post(f"{base}decide/", {"function": "note", "decision": "accept"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    source.refresh_from_db()
    assert pending(source)[0]["status"] == "changed"


def test_the_diff_of_a_poisoned_description_is_escaped(source: ToolSource, staff_user: Any) -> None:
    from tools_app.models import AuditRecord

    change(source, "poison")
    held(source, "note")
    client = Client()
    client.force_login(staff_user)
    record = AuditRecord.objects.get(kind="definition", tool="note", status="changed")
    for url in (f"/tools/sources/{source.name}/review/", f"/tools/audit/{record.pk}/"):
        page = client.get(url).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
        assert "&lt;/pre&gt;" in page
    assert POISON[:40] in record.detail["diff"]["description"].replace("\n+", " ")


def test_a_tool_named_like_a_builtin_or_another_sources_stays_held(
    source: ToolSource, staff_user: Any
) -> None:
    from tests.tools.mcp.servers import serve_mcp

    with serve_mcp() as (url, _):
        other = mcp_server_add(name="other", url=url, allow_private=True, user=staff_user)
        mcp_refresh(other)
        # Even with automatic acceptance on: a shadowing name is never accepted unseen.
        source_review_policy_set(source, auto_accept=True, serve_pinned=False, user=staff_user)
        change(source, "shadow")
        shell = held(source, "shifty_shell_exec")
        picture = held(source, "shifty_picture")
        assert (shell["shadows"], picture["shadows"]) == ("shell_exec", "picture")
        builtin = selectors.tool_named("shell_exec")
        assert builtin is not None and not issubclass(builtin, ImportedTool)
        theirs = selectors.tool_named("picture")
        assert theirs is not None and theirs.source_name == "other"  # type: ignore[attr-defined]
        assert selectors.tool_named("shifty_shell_exec") is None
        client = Client()
        client.force_login(staff_user)
        page = client.get(f"/tools/sources/{source.name}/review/").content.decode()
        assert "Its name is the name of another tool (shell_exec)" in page
        from tools_app.executors.mcp.runtime import runtime

        runtime().close_all(timeout=5)
