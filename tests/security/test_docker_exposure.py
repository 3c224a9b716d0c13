"""Issue 20, finding 9: the Docker group was on for non-staff users, with inspect on every
container by default. It is staff-only until an admin opens it, and ``docker_inspect`` keeps
environment variable names but not their values unless an admin allows them. (Against the real
engine: tests/tools/docker.)"""

from __future__ import annotations

import pytest

from tools_app.executors.docker.activity import env_shown
from tools_app.models import ToolCall
from tools_app.registry import TOOLS
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind

pytestmark = [pytest.mark.django_db(transaction=True)]

ARGS = {"container_id": "web", "command": "id"}
REFUSAL = (
    "policy: the Docker tool is for admins only (an admin can open it to everyone in the "
    "Tools Manager)"
)


def bind(user, tool: str) -> ToolCall:
    fields = TOOLS[tool].model_fields
    return toolcall_bind(
        request=CallRequest(tool=tool, arguments={k: v for k, v in ARGS.items() if k in fields}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )


@pytest.mark.parametrize("tool", sorted(t for t in TOOLS if t.startswith("docker_")))
def test_it_refuses_every_docker_tool_to_a_non_staff_user_by_default(user, tool):
    call = bind(user, tool)
    assert (call.status, call.error) == ("denied", REFUSAL)


def test_an_inactive_staff_account_is_refused_too(staff_user):
    staff_user.is_active = False
    staff_user.save(update_fields=["is_active"])
    # Refused before the Docker group's own check: a deactivated account has no grants.
    call = bind(staff_user, "docker_inspect")
    assert call.status == "denied" and "deactivated" in call.error


def test_staff_pass_the_check(staff_user):
    assert bind(staff_user, "docker_list_containers").status == ToolCall.Status.QUEUED


def test_it_redacts_environment_values_and_keeps_the_names():
    env = ["PATH=/usr/bin", "DB_URL=postgres://u:pw@db/x", "EMPTY=", "FLAG"]
    assert env_shown(env, values=False) == {
        "DB_URL": "[redacted]",
        "EMPTY": "[redacted]",
        "FLAG": "[redacted]",
        "PATH": "[redacted]",
    }
    assert env_shown(env, values=True)["DB_URL"] == "postgres://u:pw@db/x"
    assert env_shown(["A=b=c"], values=True) == {"A": "b=c"}
