"""Issue 35: a stdio MCP server's per-person variable (a personal access token) reaches that
person's own server process and nothing else - not another person's server, not the shell
sandbox of the same conversation, not a host command line, not ``docker inspect``, not the
database as stored, the audit log, the pages, exports or logs. A real server (tests/tools/mcp/
env_server.py, the official SDK) is added through the Tools Manager's form with the variable
marked per person; two people enter their values on My connections; each calls it through
the binding from their own conversation."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from tests.security.test_stdio_secrets import (
    SHELL_ATTACK,
    body_of,
    call_remote,
    sha,
    stdio_source_add,
)
from tests.tools.conftest import ISOLATED
from tests.tools.mcp.conftest import (  # noqa: F401  (fixtures)
    _forget_imported,
    env_server,
    mcp_venv,
)
from tests.tools.mcp.test_stdio_secrets import answer
from tools_app.connections.models import SourceConnection
from tools_app.models import AuditRecord, ToolCall, ToolSource
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute

ALICE = f"ghp-alice-{secrets.token_hex(12)}"
BOB = f"ghp-bob-{secrets.token_hex(12)}"
LEAKS = (ALICE, BOB)


def assert_nowhere(text: str, where: str, values: tuple[str, ...] = LEAKS) -> None:
    for value in values:
        assert value not in text, f"{where} shows a person's value"


@dataclass
class Person:
    user: Any
    client: Client
    conversation: Any


@dataclass
class Setup:
    backend: str
    source: ToolSource
    admin: Client
    alice: Person
    bob: Person

    def call(self, who: Person, remote: str, arguments: dict[str, Any]) -> ToolCall:
        return call_remote(self.source, who.user, who.conversation, remote, arguments)

    def token_of(self, who: Person) -> str:
        return str(answer(self.call(who, "secret_sha256", {"name": "GH_TOKEN"}))["sha256"])


@pytest.fixture(params=ISOLATED)
def setup(
    request: pytest.FixtureRequest,
    env_server: str,  # noqa: F811
    worker: str,
    staff_user: Any,
    caplog: pytest.LogCaptureFixture,
) -> Setup:
    from chat_app.models import Conversation

    backend = request.param
    admin = Client()
    admin.force_login(staff_user)
    name = f"pleak-{backend}"
    source = stdio_source_add(
        admin,
        name=name,
        command=env_server,
        backend=backend,
        env_fields={"env-new_name_0": "GH_TOKEN", "env-new_person_0": "on"},
        caplog=caplog,
    )
    people = []
    for username, value in (("alice", ALICE), ("bob", BOB)):
        user = get_user_model().objects.create_user(username, password=f"{username}-pw-1")
        client = Client()
        client.force_login(user)
        saved = client.post(
            reverse("connections:person-env", args=[name]), {"env__GH_TOKEN": value}
        )
        assert saved.status_code == 302
        conversation = Conversation.objects.create(owner=user, title="mine")
        people.append(Person(user, client, conversation))
    return Setup(backend, source, admin, *people)


def test_each_person_gets_their_own_value_and_never_the_others(setup: Setup) -> None:
    assert setup.token_of(setup.alice) == sha(ALICE)
    assert setup.token_of(setup.bob) == sha(BOB)
    assert setup.token_of(setup.alice) == sha(ALICE)  # both sessions live, neither mixed
    # Bob cannot use Alice's conversation (and with it her workspace or her server).
    tool = {f["remote"]: f["name"] for f in setup.source.functions}["secret_sha256"]
    theirs = toolcall_bind(
        request=CallRequest(tool=tool, arguments={"name": "GH_TOKEN"}),
        ctx=BindContext(
            user_id=setup.bob.user.pk,
            conversation_id=setup.alice.conversation.pk,
            source="chat",
        ),
    )
    if theirs.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=theirs.pk)
        theirs.refresh_from_db()
    assert sha(ALICE) not in json.dumps(theirs.result or {})


def test_the_shell_of_the_same_conversation_cannot_read_it(setup: Setup) -> None:
    assert setup.token_of(setup.alice) == sha(ALICE)  # her server runs now
    shell = setup.call(setup.alice, "shell_exec", {"command": SHELL_ATTACK})
    assert shell.status == "succeeded", (shell.error, shell.result)
    out = json.dumps(shell.result)
    assert "PATH=" in out
    assert_nowhere(out, "the shell sandbox")


def test_it_is_on_no_command_line_nor_in_docker_inspect(setup: Setup) -> None:
    assert setup.token_of(setup.alice) == sha(ALICE)
    assert setup.token_of(setup.bob) == sha(BOB)
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        assert_nowhere(text, f"{cmdline} (ps)")
    if setup.backend == "docker":
        from tools_app.sandbox import get_sandbox

        api = get_sandbox("docker").api  # type: ignore[attr-defined]
        ids = set(
            ToolCall.objects.filter(tool__endswith="secret_sha256").values_list(
                "sandbox_id", flat=True
            )
        )
        assert len(ids) == 2  # one server per person
        for sandbox_id in ids:
            info = api.inspect_container(sandbox_id.removeprefix("docker:"))
            assert "GH_TOKEN" not in json.dumps(info["Config"]["Env"])
            assert_nowhere(json.dumps(info), "docker inspect")
            for exec_id in info.get("ExecIDs") or []:
                assert_nowhere(json.dumps(api.exec_inspect(exec_id)), "docker inspect of an exec")


def test_it_is_nowhere_in_the_database_audit_pages_or_logs(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    assert setup.token_of(setup.alice) == sha(ALICE)
    assert setup.token_of(setup.bob) == sha(BOB)
    stored = SourceConnection.objects.get(user=setup.alice.user, source=setup.source)
    assert json.loads(stored.secrets) == {"env:GH_TOKEN": ALICE}  # decrypted on read only

    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            for row in cursor.fetchall():
                assert_nowhere(" ".join(map(str, row)), f"table {table}")

    records = AuditRecord.objects.all()
    assert records.filter(tool="connection", status="connected").count() == 2
    for record in records:
        assert_nowhere(json.dumps(record.detail, default=str), "an audit record")

    source = setup.source
    for client, urls in [
        (
            setup.admin,
            [
                reverse("tools:manager"),
                reverse("tools:source_edit", args=[source.name]),
                reverse("tools:audit"),
                reverse("tools:audit_export_jsonl"),
                reverse("connections:source-credentials", args=[source.name]),
            ],
        ),
        (
            setup.alice.client,
            [
                reverse("connections:page"),
                f"/c/{setup.alice.conversation.pk}/",
                f"/c/{setup.alice.conversation.pk}/export.json",
            ],
        ),
        (setup.bob.client, [reverse("connections:page")]),
    ]:
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            assert_nowhere(body_of(response), url)

    assert caplog.records
    assert_nowhere(caplog.text, "the log")
