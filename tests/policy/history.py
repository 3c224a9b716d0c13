"""A small organisation — alice and eve in "support" (granted the HTTP tool, which the
"leads" approve), bob in no group, lee in "leads"; Everyone may read the clock and files —
a history of calls made through the real binding (their audit records are what a replay
reads), and the candidate the tests replay it under."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from tools_app.models import ToolCall, ToolFunctionConfig, ToolGrant
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_finish
from tools_app.services.grants import everyone_group
from tools_app.services.policy import shadow_forget

LIVE_YAML = """\
groups:
  - name: Everyone
    tools: [current_time, file_read]
  - name: support
    members: [alice, eve]
    tools: [http_request]
  - name: leads
    members: [lee]
    tools: []
approvals:
  - tool: http_request
    mode: approver
    approvers: [leads]
"""


def org_make() -> dict[str, Any]:
    """The people and the live policy above (a test marked ``grants``)."""
    from platform_app.people.access import access_import

    ToolGrant.objects.all().delete()
    ToolFunctionConfig.objects.all().delete()
    everyone_group()
    users = get_user_model().objects
    people: dict[str, Any] = {
        name: users.create_user(name, password=f"{name}-password-1")
        for name in ("alice", "bob", "eve", "lee")
    }
    access_import(LIVE_YAML)
    shadow_forget()
    people["support"] = Group.objects.get(name="support")
    people["leads"] = Group.objects.get(name="leads")
    return people


HTTP = {"url": "https://1.1.1.1/"}

# (person, function, arguments): under the live policy of conftest.LIVE_YAML.
HISTORY: list[tuple[str, str, dict[str, Any]]] = [
    ("alice", "current_time", {}),  # allowed
    ("alice", "current_time", {}),  # allowed
    ("alice", "http_request", HTTP),  # approval (leads)
    ("alice", "shell_exec", {"command": "ls"}),  # denied: not granted
    ("bob", "http_request", HTTP),  # denied: not granted
    ("bob", "file_read", {"path": "a.txt"}),  # allowed
    ("eve", "http_request", HTTP),  # approval
    ("eve", "http_request", HTTP),  # approval
    ("lee", "current_time", {}),  # allowed
    ("lee", "file_read", {"path": "../../etc/passwd"}),  # denied by the file policy
]

# eve leaves support, which may now run the shell and HTTP without approval; Everyone keeps
# the clock only, which now asks the person first.
CANDIDATE = """\
groups:
  - name: Everyone
    tools: [current_time]
  - name: support
    members: [alice]
    tools: [http_request, shell_exec]
approvals:
  - tool: http_request
    mode: none
  - tool: current_time
    mode: requester
"""

# What the candidate changes in HISTORY, live verdict → candidate verdict.
TRANSITIONS = {
    "allowed→approval": 3,  # alice ×2, lee: the clock
    "approval→allowed": 1,  # alice: HTTP
    "denied→allowed": 1,  # alice: the shell
    "allowed→denied": 1,  # bob: file_read
    "approval→denied": 2,  # eve: HTTP, no longer in support
}


def bind(people: dict[str, Any], person: str, tool: str, arguments: dict[str, Any]) -> ToolCall:
    """Bind as the Test button does; a call that may run is finished at once (its audit
    record is written when it finishes)."""
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=people[person].pk, conversation_id=None, source="test"),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_finish(
            call,
            status=ToolCall.Status.SUCCEEDED,
            result={"success": True},
            only_if=ToolCall.Status.QUEUED,
            audit_open=False,
        )
    call.refresh_from_db()
    return call


def seed(people: dict[str, Any]) -> list[ToolCall]:
    return [bind(people, *entry) for entry in HISTORY]
