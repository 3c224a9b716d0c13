"""Whose token: the call's person's. A schedule and a subagent act with their owner's
connection, an MCP client (``/mcp/``) with its token's owner's; someone who never connected
gets the Connect refusal, never another person's account (tests/tools/mcp/oauth_servers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import logged_in, wait_for
from tests.tools.mcp.connect import connected
from tests.tools.mcp.oauth_servers import OAuthMcp, serve_oauth_mcp
from tools_app.connections.services import source_credentials_set
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.models import ToolCall

# Workers, the runner and the app server are other processes in distributed mode: the
# person's credential must be found (and renewed) there too.
pytestmark = [pytest.mark.modes]


@pytest.fixture
def served() -> Iterator[OAuthMcp]:
    from tools_app.executors.mcp.runtime import runtime

    with serve_oauth_mcp() as server:
        yield server
        runtime().close_all(timeout=5)


@pytest.fixture
def source(served: OAuthMcp, staff_user: Any, user: Any) -> Any:
    """Per person; Alice connected as alice-gh, Bob never did."""
    source = mcp_server_add(
        name="svc", label="Service", url=served.url, allow_private=True, user=staff_user
    )
    source_credentials_set(source=source, mode="person", user=staff_user)
    source.refresh_from_db()
    connected(logged_in(staff_user), served, "svc", "admin-gh")
    mcp_refresh(source, user_id=staff_user.pk)
    connected(logged_in(user), served, "svc", "alice-gh")
    source.refresh_from_db()
    return source


def finished(user: Any) -> ToolCall:
    return wait_for(
        lambda: ToolCall.objects.filter(
            tool="whoami", user=user, status__in=ToolCall.TERMINAL
        ).first(),
        timeout=30,
        message=f"whoami of {user} to finish",
    )


def test_a_schedule_acts_with_its_owners_connection(
    source: Any, user: Any, other_user: Any, worker: str
) -> None:
    from platform_app.models import Schedule
    from platform_app.schedules import schedule_fire

    for owner in (user, other_user):
        schedule = Schedule.objects.create(
            user=owner, name="who", cron="0 9 * * *", message="/whoami {}"
        )
        schedule_fire(schedule)
    mine = finished(user)
    assert mine.status == "succeeded" and mine.result["text"] == "you are alice-gh"
    theirs = finished(other_user)
    assert theirs.policy_verdict == "not_connected" and "must connect" in theirs.error


def test_a_subagent_acts_with_its_parents_connection(
    source: Any, user: Any, other_user: Any, worker: str
) -> None:
    from platform_app.subagents import Spawn, subagent_spawn

    for owner in (user, other_user):
        subagent_spawn(
            user_id=owner.pk,
            spec=Spawn(name="who", message="/whoami {}"),
            parent_conversation_id=None,
            parent_call_id=None,
            max_depth=2,
            max_concurrent=2,
            max_rounds=3,
        )
    assert finished(user).result["text"] == "you are alice-gh"
    assert finished(other_user).policy_verdict == "not_connected"


def test_an_mcp_client_acts_with_its_tokens_owners_connection(
    app_server: str, source: Any, user: Any, other_user: Any
) -> None:
    from platform_app.api_tokens import api_token_create
    from tests.tools.mcp.test_mcp_endpoint import call

    mine = call(app_server, api_token_create(user=user, name="laptop")[1], "whoami", {})
    assert not mine.is_error, mine.content
    assert "you are alice-gh" in mine.content[0].text
    theirs = call(app_server, api_token_create(user=other_user, name="laptop")[1], "whoami", {})
    assert theirs.is_error
    assert "must connect their own Service account" in theirs.content[0].text
    assert "alice-gh" not in theirs.content[0].text
