"""Issue 35: a stdio MCP server's secret environment variable reaches that server's process
and nothing else. A real server (tests/tools/mcp/env_server.py, the official SDK) is added
through the Tools Manager's form with a secret, runs in the docker or bubblewrap sandbox on
the calling conversation's workspace, and is called through the binding; then every place the
value could leak to is searched for it:

- a shell call in the same conversation (``env``, every ``/proc/*/environ`` it can see, the
  launcher's file), while the server runs;
- the host's process list (every ``/proc/<pid>/cmdline``: bubblewrap's ``--setenv`` would
  show there) and, with docker, the server container's ``docker inspect`` (``Config.Env``);
- the database (every table's text as stored), the audit log, the tool-call rows;
- the Tools Manager's pages, the audit exports, the conversation's exports, ``/api/``;
- everything logged meanwhile.
The secret is replaced and removed through the edit form too: the audit says "set",
"changed", "removed" and never the value."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import Client
from django.urls import reverse

from tests.api.conftest import api_server  # noqa: F401  (fixture)
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tests.tools.calls import run_tool
from tests.tools.conftest import ISOLATED, configure, require_backend
from tests.tools.mcp.conftest import (  # noqa: F401  (fixtures)
    _forget_imported,
    env_server,
    mcp_venv,
)
from tests.tools.mcp.test_stdio_secrets import answer
from tools_app.models import AuditRecord, ToolCall, ToolSource

# Both modes: in the distributed one a worker process lists the server's tools (its own
# session, its own sandbox) while the calls run here.
pytestmark = [pytest.mark.modes]

# New for every run: a value no earlier run can have left anywhere.
SECRET = f"sk-stdio-leak-{secrets.token_hex(12)}"
REPLACED = f"sk-stdio-replaced-{secrets.token_hex(12)}"
LEAKS = (SECRET, REPLACED)

SHELL_ATTACK = (
    "env; for f in /proc/[0-9]*/environ; do echo \"== $f\"; tr '\\0' '\\n' < \"$f\"; done; "
    "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; echo; done; "
    "ls -la /tmp /run /run/cc-env 2>&1; cat /tmp/.cc-env /tmp/.cc-env.part /run/cc-env/env 2>&1; "
    "grep -rs sk-stdio /tmp /workspace 2>&1; true"
)


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass
class Probe:
    backend: str
    source: ToolSource
    conversation: Any
    client: Client
    user: Any

    def call(self, remote: str, arguments: dict[str, Any]) -> ToolCall:
        return call_remote(
            self.source, self.user, self.conversation, remote, arguments, expect_run=True
        )

    def has(self, value: str) -> bool:
        call = self.call("secret_check", {"name": "PROBE_API_KEY", "sha256": sha(value)})
        return bool(answer(call)["matches"])


def refreshed(name: str) -> ToolSource:
    def up() -> ToolSource | None:
        source = ToolSource.objects.get(name=name)
        if source.state == "down":
            raise AssertionError(source.last_error)
        return source if source.state == "up" and source.functions else None

    return wait_for(up, timeout=90, message=f"{name} to list its tools")


NOT_RUN = (ToolCall.Status.DENIED, ToolCall.Status.AWAITING_APPROVAL)


def call_remote(
    source: ToolSource,
    user: Any,
    conversation: Any,
    remote: str,
    arguments: dict[str, Any],
    *,
    expect_run: bool = False,
) -> ToolCall:
    """One of ``source``'s functions (by its remote name) through the binding, run here."""
    tool = {f["remote"]: f["name"] for f in source.functions}.get(remote, remote)
    call = run_tool(
        tool, user=user, conversation_id=conversation.pk, call_source="chat", **arguments
    )
    if expect_run:  # it ran: neither refused nor waiting
        assert call.status not in NOT_RUN, (call.status, call.error)
    return call


def stdio_source_add(
    client: Client,
    *,
    name: str,
    command: str,
    backend: str,
    env_fields: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> ToolSource:
    """A stdio server added through the Tools Manager's form in ``backend``'s sandbox, on the
    calling conversation's workspace (beside its shell, on purpose), once it listed its tools."""
    require_backend(backend)
    caplog.set_level(logging.DEBUG)
    configure("shell", sandbox_backend=backend)
    response = client.post(
        reverse("tools:mcp_new"),
        {
            "name": name,
            "transport": "stdio",
            "command": command,
            "sandbox_backend": backend,
            "workspace": "conversation",
            **env_fields,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    return refreshed(name)


@pytest.fixture(params=ISOLATED)
def probe(
    request: pytest.FixtureRequest,
    env_server: str,  # noqa: F811
    worker: str,
    staff_user: Any,
    caplog: pytest.LogCaptureFixture,
) -> Probe:
    from chat_app.models import Conversation

    backend = request.param
    client = Client()
    client.force_login(staff_user)
    env_fields = {
        "env-new_name_0": "PROBE_API_KEY",
        "env-new_value_0": SECRET,
        "env-new_name_1": "PROBE_REGION",
        "env-new_value_1": "eu-west-1",
        "env-new_plain_1": "on",
    }
    source = stdio_source_add(
        client,
        name=f"leak-{backend}",
        command=env_server,
        backend=backend,
        env_fields=env_fields,
        caplog=caplog,
    )
    conversation = Conversation.objects.create(owner=staff_user, title="secrets")
    return Probe(backend, source, conversation, client, staff_user)


def body_of(response: Any) -> str:
    if not response.streaming:
        return str(response.content.decode())
    if response.is_async:  # an export streamed by the ASGI server

        async def collect() -> bytes:
            return b"".join([chunk async for chunk in response.streaming_content])

        return str(async_to_sync(collect)().decode())
    return b"".join(response.streaming_content).decode()


def assert_nowhere(text: str, where: str) -> None:
    for value in LEAKS:
        assert value not in text, f"{where} shows a secret value"


def test_a_shell_call_in_the_same_conversation_cannot_read_the_servers_environment(
    probe: Probe,
) -> None:
    assert probe.has(SECRET)  # the server runs now, with its secret
    shell = probe.call("shell_exec", {"command": SHELL_ATTACK})
    assert shell.status == "succeeded", (shell.error, shell.result)
    out = json.dumps(shell.result)
    assert "PATH=" in out  # the shell read environments: its own
    assert_nowhere(out, "the shell sandbox")
    assert probe.has(SECRET)  # and the server was still there to be read


def test_the_value_is_on_no_host_command_line_nor_in_the_containers_configuration(
    probe: Probe,
) -> None:
    assert probe.has(SECRET)
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue  # the process ended meanwhile
        assert_nowhere(text, f"{cmdline} (ps)")
    if probe.backend == "docker":
        from tools_app.sandbox import get_sandbox

        call = ToolCall.objects.filter(tool__endswith="secret_check").latest("id")
        api = get_sandbox("docker").api  # type: ignore[attr-defined]
        info = api.inspect_container(call.sandbox_id.removeprefix("docker:"))
        assert "PROBE_API_KEY" not in json.dumps(info["Config"]["Env"])
        assert_nowhere(json.dumps(info), "docker inspect")
        for exec_id in info.get("ExecIDs") or []:
            assert_nowhere(json.dumps(api.exec_inspect(exec_id)), "docker inspect of an exec")


def test_it_is_replaced_and_removed_through_the_form_and_audited_by_state(probe: Probe) -> None:
    url = reverse("tools:source_edit", args=[probe.source.name])
    command = " ".join(probe.source.config["command"])
    page = probe.client.get(url).content.decode()
    assert "PROBE_API_KEY" in page and "secret · set" in page and "eu-west-1" in page
    assert_nowhere(page, "the edit page")

    kept = probe.client.post(url, {"command": command, "env-value__PROBE_REGION": "eu-west-1"})
    assert kept.status_code == 302
    assert probe.has(SECRET)  # a blank input keeps the stored value
    replaced = probe.client.post(
        url,
        {
            "command": command,
            "env-value__PROBE_API_KEY": REPLACED,
            "env-value__PROBE_REGION": "eu-west-1",
        },
    )
    assert replaced.status_code == 302
    assert probe.has(REPLACED)  # a new session with the new value
    removed = probe.client.post(
        url,
        {
            "command": command,
            "env-remove__PROBE_API_KEY": "on",
            "env-value__PROBE_REGION": "eu-west-1",
        },
    )
    assert removed.status_code == 302
    assert not probe.has(REPLACED)

    records = AuditRecord.objects.filter(kind="settings", group=probe.source.group_name)
    details = [r.detail for r in records.order_by("id")]
    states = [d["after"].get("env PROBE_API_KEY") for d in details if d["changed"]]
    assert states == ["set", "changed", "removed"], details
    assert details[0]["after"]["env PROBE_REGION"] == "eu-west-1"  # plain: shown
    for detail in details:
        assert_nowhere(json.dumps(detail), "the audit record")


def test_the_value_is_nowhere_in_the_database_pages_exports_api_or_logs(
    probe: Probe, caplog: pytest.LogCaptureFixture
) -> None:
    from platform_app.api_tokens import api_token_create
    from tools_app.services.sources import source_secrets

    assert probe.has(SECRET)
    assert not probe.has("a wrong guess")
    probe.call("env_names", {})
    source = ToolSource.objects.get(pk=probe.source.pk)
    assert source_secrets(source)["env"] == {"PROBE_API_KEY": SECRET}  # stored, encrypted

    # Every table, every column, as stored.
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            for row in cursor.fetchall():
                assert_nowhere(" ".join(map(str, row)), f"table {table}")

    calls = ToolCall.objects.filter(conversation=probe.conversation)
    assert calls.count() >= 3
    pages = [
        reverse("tools:manager"),
        reverse("tools:group_edit", args=[source.group_name]),
        reverse("tools:source_edit", args=[source.name]),
        reverse("tools:audit"),
        reverse("tools:audit_export_csv"),
        reverse("tools:audit_export_jsonl"),
        f"/c/{probe.conversation.pk}/export.json",
        f"/c/{probe.conversation.pk}/export.md",
        f"/c/{probe.conversation.pk}/",
        "/api/tools/schemas.json",
        *[reverse("tools:audit", args=[r.pk]) for r in AuditRecord.objects.all()],
        *[reverse("tools:function_test", args=[f["name"]]) for f in source.functions],
    ]
    for url in pages:
        response = probe.client.get(url)
        assert response.status_code == 200, url
        assert_nowhere(body_of(response), url)

    token = api_token_create(user=probe.user, name="leak check")[1]
    api = Client(headers={"Authorization": f"Bearer {token}"})
    for url in [
        "/api/tools",
        f"/api/tools/{source.group_name}",
        "/api/audit",
        "/api/audit/export?format=jsonl",
        "/api/audit/export?format=csv",
        "/api/tool-calls",
    ]:
        response = api.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert_nowhere(body_of(response), url)

    assert caplog.records  # something was logged meanwhile
    assert_nowhere(caplog.text, "the log")
    assert_nowhere(
        "\n".join(repr(r.args) + str(getattr(r, "__dict__", "")) for r in caplog.records),
        "a log record's arguments",
    )


def test_a_v1_turn_calls_the_server_and_answers_without_the_value(
    api_server: str,  # noqa: F811
    llm: Any,
    provider: Any,
    env_server: str,  # noqa: F811
    staff_user: Any,
) -> None:
    """/v1 runs the governed loop in the app server's own process: its worker starts the
    server with the secret; the model (scripted) repeats the tool's whole result."""
    import openai

    from platform_app.api_tokens import api_token_create
    from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
    from tools_app.services.source_env import EnvChange

    require_backend("bubblewrap")
    source = mcp_server_add(
        name="leak-v1",
        command=env_server,
        settings={"sandbox_backend": "bubblewrap"},
        env=EnvChange(secret={"PROBE_API_KEY": SECRET}),
        user=staff_user,
    )
    mcp_refresh(source)  # its tools, listed here; the app server registers them too
    token = api_token_create(user=staff_user, name="v1 leak check")[1]
    check = {"name": "PROBE_API_KEY", "sha256": sha(SECRET)}
    llm.script(
        Reply(calls=[Call("secret_check", check)]),
        lambda body: Reply(text=f"The server said {body['messages'][-1]['content']}"),
    )
    sdk = openai.OpenAI(base_url=f"{api_server}/v1", api_key=token, max_retries=0, timeout=120)

    reply = sdk.chat.completions.create(
        model="General", messages=[{"role": "user", "content": "Is the key there?"}]
    )

    text = reply.model_dump_json()
    content = reply.choices[0].message.content or ""
    assert "→ succeeded" in content and re.search(r"matches\W+true", content), content
    assert_nowhere(text, "the /v1 answer")
    call = ToolCall.objects.get(tool="secret_check")
    assert call.source == ToolCall.Source.API and call.status == "succeeded"
    assert_nowhere(json.dumps([call.arguments, call.result, call.error]), "the tool call")
