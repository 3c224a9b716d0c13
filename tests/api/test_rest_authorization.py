"""Who may call what in the REST API: every operation of the OpenAPI document, called by the
owner of the data, another member, an approver, an admin (staff, not an auditor), a token
without the operation's scope and a revoked token. The table must name every operation the
API has, so a new one cannot go unlisted."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from chat_app.models import Conversation, Message, Turn
from platform_app.api.rest.api import api
from platform_app.api_tokens import ADMIN_SCOPES, api_token_create, api_token_revoke
from platform_app.models import CoreMemoryEntry, MemoryChunk, Schedule
from platform_app.reports import report_write
from tools_app.models import AuditRecord, ToolCall
from tools_app.runtime import workspace_dir_for

OWNER, OTHER, APPROVER, STAFF = "owner", "other", "approver", "staff"
ACTORS = (OTHER, APPROVER, STAFF, OWNER)  # the owner last: their writes change the data


@dataclass
class Op:
    method: str
    path: str  # {name} filled from the data made for the test
    scope: str
    expect: dict[str, int]  # actor → status; missing actors expect ``default``
    default: int = 200
    body: Any = None


def everyone(status: int) -> dict[str, int]:
    return dict.fromkeys(ACTORS, status)


def owner_only(status: int, also: dict[str, int] | None = None) -> dict[str, int]:
    others = 404  # someone else's data answers as missing data
    return {OWNER: status, OTHER: others, APPROVER: others, STAFF: others, **(also or {})}


ADMIN = {OWNER: 403, OTHER: 403, APPROVER: 403, STAFF: 200}

OPS = [
    Op("GET", "/api/me", "read", everyone(200)),
    Op("GET", "/api/agents", "read", everyone(200)),
    Op("GET", "/api/conversations", "read", everyone(200)),
    Op("POST", "/api/conversations", "chat", everyone(201), body={"title": "mine"}),
    Op("GET", "/api/conversations/{conversation}", "read", owner_only(200)),
    Op("PATCH", "/api/conversations/{conversation}", "write", owner_only(200),
       body={"title": "renamed"}),
    Op("GET", "/api/conversations/{conversation}/messages", "read", owner_only(200)),
    Op("GET", "/api/conversations/{conversation}/export", "read", owner_only(200)),
    # A turn of it is running: the owner reaches the service, which says so.
    Op("POST", "/api/conversations/{conversation}/messages", "chat", owner_only(409),
       body={"text": "hello"}),
    Op("GET", "/api/conversations/{conversation}/reports/{report}", "read", owner_only(200)),
    Op("GET", "/api/turns/{turn}", "read", owner_only(200)),
    Op("GET", "/api/turns/{finished_turn}/events", "read", owner_only(200)),
    Op("POST", "/api/turns/{other_turn}/stop", "chat", owner_only(200)),
    Op("DELETE", "/api/conversations/{spare}", "write", owner_only(204)),
    Op("GET", "/api/tool-calls", "read", everyone(200)),
    Op("GET", "/api/tool-calls/{call}", "read", owner_only(200, also={APPROVER: 200})),
    Op("GET", "/api/approvals", "approve", everyone(200)),
    # Approver mode: the approvers decide, never the person who asked; nobody else.
    Op("POST", "/api/tool-calls/{to_deny}/deny", "approve",
       {OWNER: 403, OTHER: 403, STAFF: 403, APPROVER: 200}, body={"note": "no"}),
    Op("POST", "/api/tool-calls/{call}/approve", "approve",
       {OWNER: 403, OTHER: 403, STAFF: 403, APPROVER: 200}, body={}),
    Op("GET", "/api/tools", "tools:admin", ADMIN),
    Op("GET", "/api/tools/{group}", "tools:admin", ADMIN),
    Op("PATCH", "/api/tools/{group}", "tools:admin", ADMIN, body={"enabled": True}),
    Op("PATCH", "/api/tools/functions/{tool}", "tools:admin", ADMIN, body={"enabled": True}),
    Op("GET", "/api/audit", "audit", ADMIN),
    Op("GET", "/api/audit/export", "audit", ADMIN),
    Op("GET", "/api/schedules", "read", everyone(200)),
    Op("POST", "/api/schedules", "write", everyone(201),
       body={"name": "weekly {actor}", "cron": "0 9 * * 1", "message": "Summarise the week"}),
    Op("GET", "/api/schedules/{schedule}", "read", owner_only(200)),
    Op("PATCH", "/api/schedules/{schedule}", "write", owner_only(200), body={"enabled": False}),
    # current_time needs no approval here: whoever may see the schedule reaches the service,
    # which says there is nothing to pre-approve; a person who approves nothing sees nothing.
    Op("POST", "/api/schedules/{schedule}/preapprovals", "approve",
       {OWNER: 422, OTHER: 404, APPROVER: 404, STAFF: 422},
       body={"preapprove": [{"tool": "current_time", "arguments": {"timezone": "UTC"}}]}),
    Op("DELETE", "/api/schedules/{schedule}", "write", owner_only(204)),
    Op("GET", "/api/memory", "read", everyone(200)),
    Op("GET", "/api/memory/core", "read", everyone(200)),
    Op("GET", "/api/memory/{memory}", "read", owner_only(200)),
    Op("DELETE", "/api/memory/{memory}", "write", owner_only(204)),
    Op("DELETE", "/api/memory/core/{core}", "write", owner_only(204)),
    Op("GET", "/api/reports", "read", everyone(200)),
]  # fmt: skip


def _template(path: str) -> str:
    """The operation's path as the OpenAPI document writes it."""
    names = {
        "conversation": "conversation_id", "spare": "conversation_id", "turn": "turn_id",
        "finished_turn": "turn_id", "other_turn": "turn_id", "call": "call_id",
        "to_deny": "call_id", "group": "group", "tool": "tool", "schedule": "schedule_id",
        "memory": "chunk_id", "core": "entry_id", "report": "name",
    }  # fmt: skip
    for ours, theirs in names.items():
        path = path.replace("{" + ours + "}", "{" + theirs + "}")
    return path


def test_the_matrix_names_every_operation_of_the_api() -> None:
    document = api.get_openapi_schema()
    operations = {
        (method.upper(), path) for path, methods in document["paths"].items() for method in methods
    }
    listed = {(op.method, _template(op.path)) for op in OPS}
    assert listed == operations


@pytest.fixture
def people(transactional_db: None) -> dict[str, Any]:
    users = get_user_model().objects
    out = {
        OWNER: users.create_user("olga", password="x"),
        OTHER: users.create_user("mallory", password="x"),
        APPROVER: users.create_user("april", password="x"),
        STAFF: users.create_user("sam", password="x", is_staff=True),
    }
    ops = Group.objects.create(name="ops")
    out[APPROVER].groups.add(ops)
    out["ops"] = ops
    return out


def _data(people: dict[str, Any]) -> dict[str, Any]:
    owner = people[OWNER]
    conversation = Conversation.objects.create(owner=owner, title="Olga's plans")
    Message.objects.create(conversation=conversation, role="user", content="secret plans")
    turn = Turn.objects.create(
        conversation=conversation, user=owner, source="api", phase=Turn.Phase.TOOLS
    )

    def waiting(arguments: dict[str, str]) -> ToolCall:
        return ToolCall.objects.create(
            conversation=conversation,
            turn=turn,
            user=owner,
            source="api",
            tool="current_time",
            group="time",
            arguments=arguments,
            status=ToolCall.Status.AWAITING_APPROVAL,
            approval_mode="approver",
            approver_group_ids=[people["ops"].pk],
        )

    other_conversation = Conversation.objects.create(owner=owner, title="second")
    other_turn = Turn.objects.create(conversation=other_conversation, user=owner)
    done = Conversation.objects.create(owner=owner, title="third")
    finished = Turn.objects.create(conversation=done, user=owner, status=Turn.Status.SUCCEEDED)
    report = report_write(
        workspace=workspace_dir_for(f"c{conversation.pk}"),
        folder="reports",
        title="Olga's report",
        content="# Findings\n",
        max_bytes=100_000,
    )
    return {
        "conversation": conversation.pk,
        "spare": Conversation.objects.create(owner=owner, title="spare").pk,
        "turn": turn.pk,
        "other_turn": other_turn.pk,
        "finished_turn": finished.pk,
        "call": waiting({"timezone": "UTC"}).pk,
        "to_deny": waiting({"timezone": "Asia/Tokyo"}).pk,
        "report": report.name,
        "group": "time",
        "tool": "current_time",
        "schedule": Schedule.objects.create(
            user=owner, name="daily", cron="0 9 * * *", message="Brief me"
        ).pk,
        "memory": MemoryChunk.objects.create(user=owner, content="Olga's locker code").pk,
        "core": CoreMemoryEntry.objects.create(
            user=owner, section="user", key="name", value="Olga"
        ).pk,
    }


def _call(client: Client, op: Op, token: str, data: dict[str, Any], actor: str) -> Any:
    path = op.path.format(**data)
    body = op.body
    if isinstance(body, dict):
        body = json.loads(json.dumps(body).replace("{actor}", actor))
    response = client.generic(
        op.method,
        path,
        data=json.dumps(body) if body is not None else "",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    if getattr(response, "streaming", False):
        response.body = _drain(response)
    return response


def _drain(response: Any) -> bytes:
    if not response.is_async:
        return b"".join(response.streaming_content)

    async def read() -> bytes:
        return b"".join([part async for part in response.streaming_content])

    return async_to_sync(read)()


def test_each_operation_answers_each_kind_of_caller_as_the_table_says(
    people: dict[str, Any],
) -> None:
    data = _data(people)
    tokens = {actor: api_token_create(user=people[actor], name="matrix")[1] for actor in ACTORS}
    client = Client()
    wrong = []
    for op in OPS:
        for actor in ACTORS:
            response = _call(client, op, tokens[actor], data, actor)
            wanted = op.expect.get(actor, op.default)
            if response.status_code != wanted:
                wrong.append(f"{op.method} {op.path} as {actor}: {response.status_code} "
                             f"(wanted {wanted}) {response.content[:160]!r}")  # fmt: skip
            elif response.status_code >= 400:
                error = response.json()["error"]
                assert error["message"] and error["type"], (op.path, error)
    assert not wrong, "\n".join(wrong)
    # Nobody else's reads of Olga's conversation happened: they were refused, not audited.
    assert not AuditRecord.objects.filter(kind="read").exists()
    # The refused decisions are in the audit log, with who tried.
    refused = AuditRecord.objects.filter(kind="approval", status="refused")
    assert set(refused.values_list("username", flat=True)) == {"olga", "mallory", "sam"}


def test_a_token_without_the_operations_scope_is_refused_and_a_revoked_one_is_unknown(
    people: dict[str, Any],
) -> None:
    data = _data(people)
    client = Client()
    staff = people[STAFF]
    revoked, revoked_raw = api_token_create(user=staff, name="old")
    api_token_revoke(token_id=revoked.pk)
    wrong = []
    for op in OPS:
        others = [s for s in ("chat", "read", "write", "approve", "mcp", "tools:admin", "audit")
                  if s != op.scope]  # fmt: skip
        for user in (staff, people[OWNER]):
            held = others if user is staff else [s for s in others if s not in ADMIN_SCOPES]
            token, narrow = api_token_create(user=user, name="narrow", scopes=held)
            response = _call(client, op, narrow, data, "narrow")
            api_token_revoke(token_id=token.pk)
            if response.status_code != 403 or "scope" not in response.json()["error"]["message"]:
                wrong.append(f"{op.method} {op.path} without {op.scope}: {response.status_code}")
        response = _call(client, op, revoked_raw, data, "revoked")
        if response.status_code != 401:
            wrong.append(f"{op.method} {op.path} with a revoked token: {response.status_code}")
        elif response["WWW-Authenticate"] != 'Bearer realm="controlcenter"':
            wrong.append(f"{op.method} {op.path}: no WWW-Authenticate")
    assert not wrong, "\n".join(wrong)


def test_an_admin_scope_goes_with_the_admin_flag(people: dict[str, Any]) -> None:
    """A token made while its owner was staff keeps its scopes on record, but an admin
    scope is honoured only while the owner is staff."""
    staff = people[STAFF]
    raw = api_token_create(user=staff, name="ops laptop")[1]
    client = Client()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    assert client.get("/api/audit", **auth).status_code == 200
    staff.is_staff = False
    staff.save()

    refused = client.get("/api/audit", **auth)

    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "the 'audit' scope is for admins only"
    assert client.get("/api/tools", **auth).status_code == 403
    assert client.get("/api/me", **auth).status_code == 200
