"""The review page of a source with held definitions, through the Django test client against a
real MCP server: the Tools Manager links to it, it shows each diff, Accept re-pins, Reject
keeps the pinned copy, accept-all, the review choices, a stale page's Accept refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from tests.tools.mcp.changing_server import serve_changing
from tools_app import selectors
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.models import AuditRecord, ToolSource
from tools_app.services.pins import pending


@pytest.fixture
def source(transactional_db: None, staff_user: Any) -> Iterator[ToolSource]:
    from tools_app.executors.mcp.runtime import runtime

    with serve_changing() as url:
        source = mcp_server_add(name="shifty", url=url, allow_private=True, user=staff_user)
        mcp_refresh(source)
        yield source
        runtime().close_all(timeout=5)


@pytest.fixture
def staff_client(staff_user: Any) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def changed(source: ToolSource, *whats: str) -> ToolSource:
    """Make the server change (unannounced) and refresh, as the Refresh button does."""
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.executors.mcp.services import server_spec

    spec = server_spec(source)
    rt = runtime()
    for what in whats:
        rt.run(
            lambda w=what: rt.call_tool(spec, "change", {"what": w, "announce": False}),
            timeout=20,
        )
    mcp_refresh(source)
    source.refresh_from_db()
    return source


def decide(client: Client, source: ToolSource, name: str, decision: str) -> Any:
    entry = next(e for e in pending(source) if e["name"] == name)
    return client.post(
        f"/tools/sources/{source.name}/review/decide/",
        {"function": entry["remote"], "pin": entry["offered_pin"], "decision": decision},
    )


def test_the_manager_links_a_source_with_changes_to_its_review(
    source: ToolSource, staff_client: Client
) -> None:
    changed(source, "add", "describe")
    page = staff_client.get("/tools/").content.decode()
    assert "2 changes to review" in page
    assert f'href="/tools/sources/{source.name}/review/"' in page


def test_the_review_shows_each_diff_and_accept_repins(
    source: ToolSource, staff_client: Client
) -> None:
    changed(source, "add", "describe", "remove")
    page = staff_client.get(f"/tools/sources/{source.name}/review/").content.decode()
    assert "3 waiting for review" in page
    assert (
        '<span class="diff-line diff-del"><span class="diff-sign" aria-label="removed">−</span>'
        "Take a note.</span>" in page
    )
    assert "Take a note and keep it for a week.</span>" in page
    assert "Accept removal" in page

    response = decide(staff_client, source, "note", "accept")
    assert response.status_code == 302
    note = selectors.tool_named("note")
    assert note is not None and "for a week" in note.description()
    [record] = AuditRecord.objects.filter(kind="definition", status="accepted", tool="note")
    assert record.username == "root"
    assert "+Take a note and keep it for a week." in record.detail["diff"]["description"]
    detail = staff_client.get(f"/tools/audit/{record.pk}/").content.decode()
    assert "Take a note and keep it for a week.</span>" in detail


def test_reject_keeps_the_pinned_copy_and_a_new_function_out(
    source: ToolSource, staff_client: Client, staff_user: Any
) -> None:
    changed(source, "add", "describe")
    decide(staff_client, source, "note", "reject")
    decide(staff_client, source, "sneaky", "reject")
    source.refresh_from_db()
    assert pending(source) == []
    assert selectors.tool_named("sneaky") is None
    assert selectors.tool_named("note").description() == "Take a note."  # type: ignore[union-attr]
    page = staff_client.get(f"/tools/sources/{source.name}/review/").content.decode()
    assert "Nothing waits for review" in page and "Rejected definitions" in page
    assert AuditRecord.objects.filter(kind="definition", status="rejected").count() == 2


def test_accept_all_accepts_every_held_function(source: ToolSource, staff_client: Client) -> None:
    changed(source, "add", "schema")
    response = staff_client.post(
        f"/tools/sources/{source.name}/review/decide/", {"decision": "accept_all"}
    )
    assert response.status_code == 302
    source.refresh_from_db()
    assert pending(source) == []
    assert selectors.tool_named("sneaky") is not None
    assert AuditRecord.objects.filter(kind="definition", status="accepted").count() == 2


def test_a_stale_page_cannot_accept_a_definition_it_did_not_show(
    source: ToolSource, staff_client: Client
) -> None:
    changed(source, "describe")
    stale = pending(source)[0]
    changed(source, "poison")
    response = staff_client.post(
        f"/tools/sources/{source.name}/review/decide/",
        {"function": "note", "pin": stale["offered_pin"], "decision": "accept"},
        follow=True,
    )
    assert "changed again since the page was shown" in response.content.decode()
    assert selectors.tool_named("note").description() == "Take a note."  # type: ignore[union-attr]


def test_the_review_choices_are_saved_audited_and_auto_accept_shows_in_red(
    source: ToolSource, staff_client: Client
) -> None:
    response = staff_client.post(
        f"/tools/sources/{source.name}/review/policy/", {"auto_accept": "on"}
    )
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.auto_accept is True and source.serve_pinned is False
    record = AuditRecord.objects.filter(kind="settings", group=source.group_name).latest("id")
    assert record.detail["after"] == {"auto_accept": True, "serve_pinned": False}
    manager = staff_client.get("/tools/").content.decode()
    assert 'class="tag tag-bad auto-accept-on"' in manager
    review = staff_client.get(f"/tools/sources/{source.name}/review/").content.decode()
    assert "Changes reach the model unreviewed" in review


def test_bad_input_gets_a_clear_answer_not_a_500(source: ToolSource, staff_client: Client) -> None:
    url = f"/tools/sources/{source.name}/review/decide/"
    response = staff_client.post(url, {"decision": "accept", "function": "nope"}, follow=True)
    assert response.status_code == 200 and "nope has nothing waiting for review" in (
        response.content.decode()
    )
    response = staff_client.post(url, {"decision": "maybe"}, follow=True)
    assert "Choose Accept or Reject." in response.content.decode()
    assert staff_client.get("/tools/sources/missing/review/").status_code == 404
    assert staff_client.get(url).status_code == 405
