"""The manager's rows: state, sandbox health, calls and failures in 24 h, last test."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

import pytest
from django.utils import timezone
from pydantic import Field

from tools_app.manager import selectors as manager_selectors
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.registry import GROUPS, GroupSettings, ToolGroup, register_group


class BoxSettings(GroupSettings):
    sandbox_backend: Literal["auto", "docker", "bubblewrap", "none"] = Field("docker")


@pytest.fixture
def boxed_group():
    group = register_group(
        ToolGroup(
            name="boxed",
            label="Boxed",
            description="Test-only sandboxed group.",
            settings_model=BoxSettings,
            sandboxed=True,
        )
    )
    yield group
    GROUPS.pop("boxed", None)


@pytest.fixture
def health(monkeypatch):
    state = {
        "backends": {
            "docker": (True, "Docker 27"),
            "bubblewrap": (False, "no bwrap"),
            "none": (True, "no sandbox"),
        },
        "auto": ("docker", ""),
    }
    monkeypatch.setattr(manager_selectors, "_probe", lambda: (state["backends"], state["auto"]))
    monkeypatch.setattr(manager_selectors, "_health_cache", None)  # restored afterwards
    return state


def status(settings_backend: str) -> manager_selectors.SandboxStatus:
    group = GROUPS["boxed"]
    return manager_selectors.sandbox_status(group, BoxSettings(sandbox_backend=settings_backend))


def test_it_shows_the_configured_backend_and_its_health(boxed_group, health):
    assert status("docker").state == "ok"
    bad = status("bubblewrap")
    assert (bad.state, bad.detail) == ("bad", "no bwrap")
    auto = status("auto")
    assert (auto.backend, auto.resolved, auto.state) == ("auto", "docker", "ok")


def test_no_sandbox_is_a_red_warning(boxed_group, health, staff_client):
    assert status("none").state == "unsafe"
    ToolGroupConfig.objects.create(name="boxed", settings={"sandbox_backend": "none"})
    html = staff_client.get("/tools/").content.decode()
    assert "no sandbox: commands run directly on the worker host" in html


def test_a_broken_sandbox_module_shows_unknown(boxed_group, monkeypatch):
    def broken():
        raise ImportError("no module named docker")

    monkeypatch.setattr(manager_selectors, "_probe", broken)
    monkeypatch.setattr(manager_selectors, "_health_cache", None)
    assert status("docker").state == "unknown"
    assert status("auto").state == "unknown"


def test_in_process_groups_show_a_dash(staff_client):
    html = staff_client.get("/tools/").content.decode()
    assert "in-process" in html
    assert not manager_selectors.group_row("time").sandbox.sandboxed


def test_it_counts_calls_and_failures_of_the_last_24_hours(db):
    def call(status: str, age_hours: float = 1, source: str = "chat") -> ToolCall:
        c = ToolCall.objects.create(tool="current_time", group="time", status=status, source=source)
        ToolCall.objects.filter(pk=c.pk).update(
            created_at=timezone.now() - timedelta(hours=age_hours)
        )
        return c

    call("succeeded")
    call("failed")
    call("denied")
    call("failed", age_hours=30)  # too old
    latest_test = call("succeeded", age_hours=0.5, source="test")
    call("failed", age_hours=2, source="test")
    row = manager_selectors.group_row("time")
    assert (row.calls_24h, row.failed_24h, row.denied_24h, row.failures_24h) == (5, 2, 1, 3)
    assert row.last_test == latest_test


def test_the_page_lists_groups_functions_and_their_switches(staff_client):
    html = staff_client.get("/tools/").content.decode()
    assert 'id="group-time"' in html and 'id="function-current_time"' in html
    for label in ("Enabled", "Ask why"):
        assert f'<span class="switch-text">{label}</span>' in html
    assert '<select id="approval-current_time" name="approval_mode"' in html
    assert 'role="switch"' in html
    assert "never tested" in html


def browser_limits_set() -> None:
    ToolGroupConfig.objects.update_or_create(
        name="browser",
        defaults={
            "settings": {
                "timeout_seconds": 45,
                "allowed_domains": ["*.github.com", "docs.python.org", "a.example", "b.example"],
            }
        },
    )


def test_the_overview_shows_each_groups_key_limits(staff_client):
    # Seed 003's Tools Manager: "Browser Tool — Timeout: 30s, Max screenshots: 10, Allowed
    # domains: *.github.com, ..." on the overview, without opening each group.
    browser_limits_set()
    html = staff_client.get("/tools/").content.decode()
    browser = html[html.index('id="group-browser"') :]
    browser = browser[: browser.index("</tbody>")]
    limits = browser[browser.index('class="key-limits"') :]
    assert '<span class="limit-label">Timeout:</span> 45 s' in limits
    assert (
        '<span class="limit-label">Allowed domains:</span> '
        "*.github.com, docs.python.org, a.example (+1 more)"
    ) in limits
    assert '<span class="limit-label">Max screenshots per conversation:</span> 10' in limits
    shell = html[html.index('id="group-shell"') :]
    assert '<span class="limit-label">Allowed commands:</span> any program' in shell
    file = html[html.index('id="group-file"') :]
    assert '<span class="limit-label">Max file size:</span> 1 MB' in file


def test_the_key_limits_are_in_the_pages_language(staff_client):
    # Labels, values, units and hover text in Russian, like the rest of a Russian page.
    browser_limits_set()
    html = staff_client.get("/tools/", HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    browser = html[html.index('id="group-browser"') :]
    limits = browser[browser.index('class="key-limits"') : browser.index("</tbody>")]
    assert "Timeout:" not in limits and "more)" not in limits
    assert '<span class="limit-label">Тайм-аут:</span> 45 с' in limits, limits[:600]
    assert "a.example (и ещё 1)" in limits
    shell = html[html.index('id="group-shell"') :]
    assert "любая программа" in shell[: shell.index("</tbody>")]
    file = html[html.index('id="group-file"') :]
    assert '<span class="limit-label">Макс. размер файла:</span> 1 МБ' in file


def test_each_group_has_a_docs_page_the_model_and_the_admin_read(staff_client, user):
    # Seeds 000 and 002: a page per tool group, readable through docs_read and linked from the
    # Tools Manager. Each page names every function of its group.
    from tests.tools.calls import ok, run_tool
    from tools_app.registry import GROUPS

    html = staff_client.get("/tools/").content.decode()
    for name, group in GROUPS.items():
        row = manager_selectors.group_row(name)
        assert row.docs_page == f"tools/{name}.md", name
        assert f'href="/tools/groups/{name}/docs/"' in html, name
        page = ok(run_tool("docs_read", user=user, path=f"docs/{row.docs_page}"))["content"]
        for tool in group.tools:
            assert f"`{tool.tool_name}" in page, (name, tool.tool_name)
    shown = staff_client.get("/tools/groups/docker/docs/")
    assert shown.status_code == 200
    assert "<h1>Docker tools</h1>" in shown.content.decode()
    assert "container_run" in shown.content.decode()
    overview = ok(run_tool("docs_read", user=user, path="docs/tools/README.md"))["content"]
    assert all(f"({name}.md)" in overview for name in GROUPS)
    assert staff_client.get("/tools/groups/nope/docs/").status_code == 404
