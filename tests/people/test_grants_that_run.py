"""Issue 39, item 1: a grant that cannot run is said so. The model is offered only the
functions the person could call (a Docker group kept for admins is not offered to a member it
was granted to, an admin is offered it), and the grants editor warns next to such a grant."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from chat_app.agent_kinds.registry import kind_for
from chat_app.models import Conversation, Turn
from chat_app.services.agents import agent_for_conversation
from chat_app.services.tool_offer import turn_offer
from tools_app.models import ToolCall, ToolGrant, ToolGroupConfig
from tools_app.registry import GROUPS
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_check
from tools_app.services.decision import usable_tools
from tools_app.services.grants import everyone_group

pytestmark = [pytest.mark.django_db, pytest.mark.grants]

DOCKER = {t.tool_name for t in GROUPS["docker"].tools}


@pytest.fixture
def ops(member: Any) -> Group:
    ToolGrant.objects.all().delete()
    everyone_group()
    group = Group.objects.create(name="ops")
    group.user_set.add(member)
    ToolGrant.objects.create(group=group, kind="group", name="docker")
    ToolGrant.objects.create(group=group, kind="group", name="time")
    return group


def offered(user: Any) -> set[str]:
    conversation = Conversation.objects.create(owner=user, title="t")
    turn = Turn.objects.create(conversation=conversation, user=user)
    agent = agent_for_conversation(conversation)
    offer, _scope = turn_offer(turn, agent, kind_for(agent))
    return {tool.tool_name for tool in offer.tools}


def test_it_offers_a_member_no_docker_function_while_docker_is_for_admins(ops, member):
    names = offered(member)
    assert "current_time" in names
    assert not names & DOCKER
    # Binding agrees: the call the model is no longer offered is refused, for that reason.
    checked = toolcall_check(
        request=CallRequest(tool="docker_list_containers", arguments={}),
        ctx=BindContext(user_id=member.pk, conversation_id=None, source="test"),
    )
    assert checked.call.status == ToolCall.Status.DENIED
    assert "for admins only" in checked.call.error


def test_it_offers_an_admin_the_docker_functions_the_settings_allow(admin_user):
    names = offered(admin_user)
    assert {"docker_list_containers", "docker_inspect", "docker_logs"} <= names
    # Operations an admin has not allowed (read-only by default) are refused to everyone.
    assert "docker_exec" not in names


def test_it_offers_a_member_docker_once_an_admin_opens_it(ops, member):
    ToolGroupConfig.objects.update_or_create(
        name="docker", defaults={"settings": {"staff_only": False}}
    )
    names = offered(member)
    assert {"docker_list_containers", "docker_inspect", "docker_logs"} <= names
    assert "docker_exec" not in names
    ToolGroupConfig.objects.filter(name="docker").update(enabled=False)
    from tools_app.models import ToolConfigVersion

    ToolConfigVersion.bump()
    assert not offered(member) & DOCKER


def test_usable_tools_is_what_binding_allows_for_every_granted_function(ops, member):
    usable = {t.tool_name for t in usable_tools(member.pk, None)}
    for name in DOCKER | {"current_time"}:
        checked = toolcall_check(
            request=CallRequest(tool=name, arguments=GROUPS_EXAMPLE.get(name, {})),
            ctx=BindContext(user_id=member.pk, conversation_id=None, source="test"),
        )
        refused = checked.call.status == ToolCall.Status.DENIED
        assert refused == (name not in usable), (name, checked.call.error)


GROUPS_EXAMPLE = {t.tool_name: t.example() for g in GROUPS.values() for t in g.tools}


def test_the_grants_editor_warns_when_a_granted_group_is_for_admins_only(admin_client, ops):
    html = admin_client.get(f"/people/groups/{ops.pk}/grants/").content.decode()
    assert 'id="grant-warning-docker"' in html
    assert "is for admins only in its settings" in html
    assert 'href="/tools/groups/docker/edit/"' in html
    assert 'id="grant-warning-time"' not in html


def test_the_grants_editor_warns_when_a_granted_group_is_switched_off(admin_client, ops):
    ToolGroupConfig.objects.update_or_create(name="time", defaults={"enabled": False})
    html = admin_client.get(f"/people/groups/{ops.pk}/grants/").content.decode()
    assert 'id="grant-warning-time"' in html
    assert "is switched off in the Tools Manager" in html
    assert 'href="/tools/#group-time"' in html


def test_the_grants_editor_names_single_functions_members_cannot_run(admin_client, ops):
    ToolGrant.objects.filter(group=ops).delete()
    ToolGrant.objects.create(group=ops, kind="function", name="docker_exec")
    ToolGrant.objects.create(group=ops, kind="function", name="docker_logs")
    ToolGroupConfig.objects.update_or_create(
        name="docker", defaults={"settings": {"staff_only": False}}
    )
    html = admin_client.get(f"/people/groups/{ops.pk}/grants/").content.decode()
    assert "1 granted function is refused to members" in html and "docker_exec" in html


def test_a_group_granted_nothing_shows_no_warning(admin_client, ops):
    other = Group.objects.create(name="plain")
    html = admin_client.get(f"/people/groups/{other.pk}/grants/").content.decode()
    assert "grant-warning" not in html
