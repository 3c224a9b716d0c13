"""Scenario 3 in the chat page: "Download data.csv and count its lines".

A local web server serves ``data.csv``. The SSRF guard refuses loopback addresses until an
admin names the host under the HTTP group's "private allowed": first the person's request is
denied before anything is sent (the server sees not even a connection), then, with the host
allowed, the scripted model downloads the file with ``http_request``, writes the body it
received to the workspace with ``file_write``, counts the lines with ``shell_exec wc -l`` in
the sandbox and answers with the number it read from that result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login, wait_connected
from tests.llm_server import Call, Reply
from tests.scenarios.agent import READERS, assert_no_surprises
from tests.tools.browser.site import Request, Response, Site, serving
from tools_app.models import AuditRecord, ToolCall
from tools_app.services.settings import group_settings_save

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

HOST = "127.0.0.8"  # a loopback address of its own: the guard's exceptions are per host
ROWS = [f"{n},sensor-{n % 7},{n * 1.5:.1f}" for n in range(1, 42)]
CSV = "id,sensor,reading\n" + "\n".join(ROWS) + "\n"
LINES = CSV.count("\n")  # 42: what wc -l says
TASK = "Download data.csv from {url} and count its lines"
SCREENSHOT = "var/scenario-http.png"
GUARD = "URL refused: 127.0.0.8 is not a public address: loopback"


def _csv(request: Request) -> Response:
    return 200, [("Content-Type", "text/csv; charset=utf-8")], CSV.encode()


@pytest.fixture(scope="module")
def data_server() -> Iterator[Site]:
    with serving(HOST, {"/data.csv": _csv}) as site:
        yield site


@pytest.fixture
def server(data_server: Site) -> Site:
    data_server.reset()
    return data_server


def cards(page: Any, tool: str) -> Any:
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def answers(page: Any) -> Any:
    return page.locator(".message.role-assistant .markdown")


def after(tool: str, then: Callable[[dict[str, Any]], Reply]) -> Callable[[dict[str, Any]], Reply]:
    """A model step: read the one result of ``tool`` in the request, insist it succeeded,
    and answer from what it says."""

    def respond(body: dict[str, Any]) -> Reply:
        [seen] = READERS["openai"](body)
        assert seen.tool == tool, f"expected the result of {tool}, got {seen}"
        assert seen.ok, f"{tool} did not succeed: {seen.result}"
        return then(seen.result)

    return respond


def ask(page: Any, conversation: Any, text: str) -> None:
    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{conversation.pk}/")
    wait_connected(page)
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_the_ssrf_guard_keeps_the_agent_off_a_loopback_server(
    page, user, conversation, llm, provider, server
):
    url = server.url("/data.csv")
    refusals: list[str] = []

    def give_up(body: dict[str, Any]) -> Reply:
        [seen] = READERS["openai"](body)
        assert seen.tool == "http_request" and not seen.ok, seen
        refusals.append(seen.result["error"])
        return Reply(text="I may not download it: the address is refused by the SSRF guard.")

    llm.script(Reply(calls=[Call("http_request", {"method": "GET", "url": url})]), give_up)
    ask(page, conversation, TASK.format(url=url))

    expect(answers(page).last).to_contain_text("refused by the SSRF guard", timeout=60_000)
    card = cards(page, "http_request")
    expect(card.locator(".status-word")).to_have_text("denied")
    expect(card.locator(".toolcall-error")).to_contain_text(f"policy: {GUARD}")
    expect(card.locator(".toolcall-error")).to_contain_text("an admin must allow it explicitly")
    assert_no_surprises(llm)
    assert refusals == [f"policy: {GUARD}; an admin must allow it explicitly"]
    call = ToolCall.objects.get(tool="http_request")
    assert (call.status, call.policy_verdict) == ("denied", "denied")
    server.assert_untouched()  # no request, not even a connection


def test_a_person_has_the_agent_download_a_csv_and_count_its_lines(
    page, user, staff_user, dev_conversation, llm, provider, server
):
    group_settings_save(user=staff_user, group="http", values={"private_allowed": [HOST]})
    url = server.url("/data.csv")
    counted: list[int] = []

    def save(result: dict[str, Any]) -> Reply:
        assert result["status"] == 200 and result["truncated"] is False, result
        content = result["text"]
        return Reply(calls=[Call("file_write", {"path": "data.csv", "content": content})])

    def answer(result: dict[str, Any]) -> Reply:
        match = re.fullmatch(r"\s*(\d+) data\.csv\n", result["stdout"])
        assert match, f"unexpected wc output: {result['stdout']!r}"
        counted.append(int(match.group(1)))
        return Reply(text=f"**data.csv** has {match.group(1)} lines.")

    llm.script(
        Reply(text="Downloading it.", calls=[Call("http_request", {"method": "GET", "url": url})]),
        after("http_request", save),
        after(
            "file_write", lambda _: Reply(calls=[Call("shell_exec", {"command": "wc -l data.csv"})])
        ),
        after("shell_exec", answer),
    )
    ask(page, dev_conversation, TASK.format(url=url))

    expect(answers(page).last).to_contain_text(f"data.csv has {LINES} lines", timeout=60_000)
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    for tool in ("http_request", "file_write", "shell_exec"):
        expect(cards(page, tool).locator(".status-word")).to_have_text("succeeded")
    expect(cards(page, "http_request").locator(".toolcall-output")).to_contain_text(
        f"200 ({len(CSV)} characters)"
    )
    expect(cards(page, "shell_exec").locator(".toolcall-output")).to_contain_text(
        f"{LINES} data.csv"
    )
    assert_no_surprises(llm)
    assert counted == [LINES]

    saved = Path(settings.WORKSPACES_DIR) / f"c{dev_conversation.pk}" / "data.csv"
    assert saved.read_text() == CSV
    assert server.paths() == ["/data.csv"]  # downloaded once, by the tool
    calls = ToolCall.objects.filter(conversation=dev_conversation).order_by("id")
    assert [(c.tool, c.status) for c in calls] == [
        ("http_request", "succeeded"),
        ("file_write", "succeeded"),
        ("shell_exec", "succeeded"),
    ]
    audited = AuditRecord.objects.filter(kind="call", conversation_id=dev_conversation.pk)
    assert sorted(audited.values_list("tool", "status")) == [
        ("file_write", "succeeded"),
        ("http_request", "succeeded"),
        ("shell_exec", "succeeded"),
    ]
    screenshot_whole_conversation(page)


def screenshot_whole_conversation(page: Any) -> None:
    overflow = page.evaluate(
        "(() => { const m = document.getElementById('messages');"
        " return m.scrollHeight - m.clientHeight; })()"
    )
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": size["height"] + max(overflow, 0)})
    page.screenshot(path=SCREENSHOT, full_page=True)
