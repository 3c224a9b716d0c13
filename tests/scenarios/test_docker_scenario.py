"""Scenario 2 in the chat page: "Check the status of container X".

A real container runs on the CI's Docker engine (the busybox mini image, no network, a loop
printing log lines, a label). A person asks about it in real Chromium; the scripted model
reads each result before it goes on: ``docker_list_containers`` → ``docker_inspect`` →
``docker_logs`` → ``docker_exec``, which policy refuses (exec is not an allowed operation by
default) → an answer that says so. A staff user then opens the Tools Manager in another
browser context, adds ``exec`` to the Docker group's allowed operations through the real
form and saves; the person asks again and the command runs, its output in the card. The
settings change is in the audit log with its before and after. (The Docker group is for
staff only by default; an admin opened it to everyone before the scenario starts.)
"""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, wait_connected
from tests.helpers import require, wait_for
from tests.scenarios.agent import (
    Seen,
    Step,
    assert_no_surprises,
    failed_with,
    output_has,
    scripted_agent,
    succeeded,
)
from tools_app.models import AuditRecord, ToolCall, ToolGroupConfig

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

IMAGE = "controlcenter-sandbox-mini:latest"
LABEL = "cc.scenario=docker-status"
SCREENSHOT = "var/scenario-docker.png"
READ_ONLY = ["list", "inspect", "logs"]
REFUSAL = "docker operation 'exec' is not allowed"


@dataclass(frozen=True)
class Container:
    name: str
    id: str

    @property
    def hostname(self) -> str:
        return self.id[:12]  # Docker's default hostname: the short id


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)


def _log_lines(name: str) -> int:
    return _docker("logs", name).stdout.count("tick")


@pytest.fixture
def web_container() -> Iterator[Container]:
    """A container the agent is asked about. It exits at once on SIGTERM (busybox sh as
    PID 1 ignores it otherwise), so nothing waits for Docker's kill timeout."""
    require(_docker("info").returncode == 0, "no Docker engine")
    require(_docker("image", "inspect", IMAGE).returncode == 0, f"image {IMAGE} missing")
    name = f"cc-scn-web-{uuid.uuid4().hex[:8]}"
    loop = "trap 'exit 0' TERM; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"
    started = _docker(
        "run", "-d", "--name", name, "--network", "none", "--label", LABEL,
        IMAGE, "sh", "-c", loop,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        wait_for(lambda: _log_lines(name) >= 5, timeout=10, message=f"{name} to log")
        yield Container(name=name, id=started.stdout.strip())
    finally:
        _docker("rm", "-f", name)


@contextlib.contextmanager
def staff_page(browser: Any, app_server: str) -> Iterator[Any]:
    """A second person at another browser: the admin, in a context of their own."""
    context = browser.new_context(base_url=app_server, viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    try:
        login(page, "root", "root-password-1")
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors in the admin's page: {errors}"


def cards(page: Any, tool: str) -> Any:
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def ask(page: Any, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


# --- what the agent checks in the results it reads --------------------------------------------


def lists_running(name: str) -> Any:
    def check(seen: list[Seen]) -> None:
        [listed] = seen
        rows = {row["name"]: row for row in listed.result["containers"]}
        assert name in rows, f"{name} is not in the list: {sorted(rows)}"
        assert rows[name]["status"] == "running", rows[name]

    return check


def inspected_running(seen: list[Seen]) -> None:
    [inspected] = seen
    assert inspected.result["state"]["Running"] is True, inspected.result["state"]
    assert inspected.result["labels"].get("cc.scenario") == "docker-status"


def logged_lines(seen: list[Seen]) -> None:
    [logs] = seen
    lines = [line for line in logs.result["logs"].splitlines() if "tick" in line]
    assert len(lines) == 5, f"expected the last 5 log lines, got {lines}"


def first_plan(web: Container, task: str) -> list[Step]:
    return [
        Step(
            "list",
            text="Let me look for the container.",
            calls=[("docker_list_containers", {"name": web.name})],
        ),
        Step(
            "inspect",
            calls=[("docker_inspect", {"container_id": web.name})],
            expect=[succeeded, lists_running(web.name)],
        ),
        Step(
            "logs",
            calls=[("docker_logs", {"container_id": web.name, "tail": 5})],
            expect=[succeeded, inspected_running],
        ),
        Step(
            "exec",
            text="It is running and logging. Let me check its hostname from inside.",
            calls=[("docker_exec", {"container_id": web.name, "command": "cat /etc/hostname"})],
            expect=[succeeded, logged_lines],
        ),
        Step(
            "answer",
            text=f"**{web.name}** is running and logs a tick every 0.1 s. I could not run a "
            "command inside it: exec is not an allowed operation.",
            expect=[failed_with(REFUSAL, "Tools Manager")],
        ),
    ]


def second_plan(web: Container) -> list[Step]:
    return [
        Step(
            "exec again",
            calls=[("docker_exec", {"container_id": web.name, "command": "cat /etc/hostname"})],
        ),
        Step(
            "answer",
            text=f"Inside **{web.name}** the hostname is `{web.hostname}`.",
            expect=[succeeded, output_has(web.hostname, '"exit_code": 0')],
        ),
    ]


def allow_exec_in_the_tools_manager(admin: Any) -> None:
    admin.goto("/tools/")
    admin.get_by_role("link", name="Edit Docker settings").click()
    operations = admin.get_by_label("Allowed operations")
    expect(operations).to_have_value("\n".join(READ_ONLY))
    operations.fill("\n".join([*READ_ONLY, "exec"]))
    admin.get_by_role("button", name="Save").click()
    expect(admin.locator("#settings-saved")).to_contain_text("allowed_operations changed")
    # The change as the audit log shows it: who, and the list before and after.
    admin.get_by_role("link", name="See it in the audit log").click()
    row = admin.locator(".audit-row.kind-settings").first
    expect(row).to_contain_text("allowed_operations")
    expect(row).to_contain_text("root")
    row.get_by_role("link").first.click()
    expect(admin.locator(".diff-table .before")).not_to_contain_text("exec")
    expect(admin.locator(".diff-table .after")).to_contain_text('"exec"')


def test_a_person_checks_a_container_and_exec_works_once_an_admin_allows_it(
    page, browser, app_server, user, staff_user, conversation, llm, provider, web_container
):
    web = web_container
    ToolGroupConfig.objects.create(name="docker", settings={"staff_only": False})
    task = f"Check the status of container {web.name}"
    scripted_agent(llm, first_plan(web, task), dialect="openai", task=task)

    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{conversation.pk}/")
    wait_connected(page)
    ask(page, task)

    expect(page.get_by_text("exec is not an allowed operation")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    for tool in ("docker_list_containers", "docker_inspect", "docker_logs"):
        expect(cards(page, tool).locator(".status-word")).to_have_text("succeeded")
    expect(cards(page, "docker_list_containers").locator(".toolcall-output")).to_contain_text(
        web.name
    )
    expect(cards(page, "docker_logs").locator(".toolcall-output")).to_contain_text("tick")
    refused = cards(page, "docker_exec")
    expect(refused.locator(".status-word")).to_have_text("denied")
    expect(refused.locator(".toolcall-error")).to_contain_text(f"policy: {REFUSAL}")
    assert_no_surprises(llm)

    with staff_page(browser, app_server) as admin:
        allow_exec_in_the_tools_manager(admin)

    scripted_agent(llm, second_plan(web), dialect="openai", task="allowed exec")
    ask(page, "An admin allowed exec now; please try the command again.")
    expect(page.get_by_text(f"the hostname is {web.hostname}")).to_be_visible(timeout=30_000)
    execs = cards(page, "docker_exec")
    expect(execs.locator(".status-word")).to_have_text(["denied", "succeeded"])
    expect(execs.nth(1).locator(".toolcall-output")).to_contain_text(web.hostname)
    execs.nth(1).locator(".toolcall-details summary").click()
    expect(execs.nth(1).locator(".toolcall-result")).to_contain_text('"exit_code": 0')
    assert_no_surprises(llm)

    denied, ran = ToolCall.objects.filter(tool="docker_exec").order_by("id")
    assert (denied.status, denied.policy_verdict) == ("denied", "denied")
    assert (ran.status, ran.result["stdout"]) == ("succeeded", f"{web.hostname}\n")
    [change] = AuditRecord.objects.filter(kind="settings", group="docker")
    assert change.username == "root"
    assert change.detail["before"]["allowed_operations"] == READ_ONLY
    assert change.detail["after"]["allowed_operations"] == [*READ_ONLY, "exec"]
    screenshot_whole_conversation(page)


def screenshot_whole_conversation(page: Any) -> None:
    overflow = page.evaluate(
        "(() => { const m = document.getElementById('messages');"
        " return m.scrollHeight - m.clientHeight; })()"
    )
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": size["height"] + max(overflow, 0)})
    page.screenshot(path=SCREENSHOT, full_page=True)
