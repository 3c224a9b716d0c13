"""Attacks on members' own agent profiles and prompts (issue 39, item 9): another's private
profile or prompt cannot be opened, changed, deleted or picked (404, as if it did not exist);
a form cannot share with a group one is not in nor list a tool one is not granted; and a
profile shared with someone never lends them its author's grants — binding refuses the call."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group

from chat_app.models import Agent, Conversation, Prompt
from chat_app.services.member_agents import (
    AgentDraft,
    group_sharing_forbidden,
    group_sharing_set,
    my_agent_save,
)
from chat_app.services.prompts import PromptDraft, prompt_save
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.library.conftest import teams_make
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord, ToolCall, ToolGrant

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def teams(user: Any, other_user: Any) -> dict[str, Any]:
    return teams_make(user, other_user)


@pytest.fixture
def private(teams: dict[str, Any]) -> dict[str, Any]:
    """alice's private profile and prompt."""
    agent = my_agent_save(
        user=teams["alice"], draft=AgentDraft(name="Alice only", tools=["current_time"])
    )
    prompt = prompt_save(
        user=teams["alice"], draft=PromptDraft(title="Alice's secret", body="the plan is X")
    )
    return {"agent": agent, "prompt": prompt}


def _menu(page: str) -> dict[str, Any]:
    found = re.search(r'<script id="slash-menu-data" type="application/json">(.*?)</script>', page)
    assert found, "the chat page carries the / menu"
    return json.loads(found.group(1))


def test_it_answers_404_to_anothers_agent_edit_and_delete(client, teams, private):
    agent = private["agent"]
    client.force_login(teams["carol"])
    assert client.get(f"/my/agents/{agent.pk}/").status_code == 404
    form = {"name": "Carol's now", "tools": ["current_time"]}
    assert client.post(f"/my/agents/{agent.pk}/", form).status_code == 404
    assert client.post(f"/my/agents/{agent.pk}/delete/").status_code == 404
    agent.refresh_from_db()
    assert agent.name == "Alice only" and agent.owner == teams["alice"]
    assert "Alice only" not in client.get("/my/agents/").content.decode()


def test_it_refuses_picking_anothers_private_agent_in_a_conversation(client, teams, private):
    conversation = Conversation.objects.create(owner=teams["carol"])
    client.force_login(teams["carol"])
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert "Alice only" not in page
    client.post(f"/c/{conversation.pk}/agent/", {"agent": private["agent"].pk})
    conversation.refresh_from_db()
    assert conversation.agent_id is None


def test_it_answers_404_to_anothers_prompt_and_keeps_it_out_of_their_menu(client, teams, private):
    prompt = private["prompt"]
    client.force_login(teams["carol"])
    assert client.get(f"/my/prompts/{prompt.pk}/").status_code == 404
    assert client.post(f"/my/prompts/{prompt.pk}/", {"title": "t", "body": "b"}).status_code == 404
    assert client.post(f"/my/prompts/{prompt.pk}/delete/").status_code == 404
    prompt.refresh_from_db()
    assert prompt.title == "Alice's secret"
    assert "the plan is X" not in client.get("/my/prompts/").content.decode()
    conversation = Conversation.objects.create(owner=teams["carol"])
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert _menu(page)["prompts"] == [] and "the plan is X" not in page


def test_it_refuses_sharing_with_a_group_one_is_not_in(client, teams):
    client.force_login(teams["alice"])
    sales = teams["sales"].pk
    response = client.post(
        "/my/agents/", {"name": "Spread", "tools": ["current_time"], "groups": [str(sales)]}
    )
    assert response.status_code == 400
    assert not Agent.objects.filter(name="Spread").exists()
    response = client.post("/my/prompts/", {"title": "p", "body": "b", "groups": [str(sales)]})
    assert response.status_code == 400 and not Prompt.objects.exists()
    for bad in ("abc", "-1", "99999"):
        response = client.post("/my/prompts/", {"title": "p", "body": "b", "groups": [bad]})
        assert response.status_code == 400 and not Prompt.objects.exists()


def test_it_refuses_sharing_with_a_group_an_admin_closed(client, teams):
    support = teams["support"]
    group_sharing_set(group=support, forbidden=True)
    client.force_login(teams["alice"])
    form = {"name": "Spread", "tools": ["current_time"], "groups": [str(support.pk)]}
    assert client.post("/my/agents/", form).status_code == 400
    assert not Agent.objects.filter(name="Spread").exists()


def test_only_an_admin_switches_a_groups_sharing(client, teams, staff_user):
    support = teams["support"]
    client.force_login(teams["alice"])
    assert client.post(f"/people/groups/{support.pk}/sharing/", {"forbidden": "1"}).status_code in (
        302,
        403,
    )
    assert not group_sharing_forbidden(support)
    client.force_login(staff_user)
    client.post(f"/people/groups/{support.pk}/sharing/", {"forbidden": "1"})
    assert group_sharing_forbidden(support)
    assert AuditRecord.objects.filter(kind="people", status="sharing_changed").exists()


def test_it_refuses_a_form_listing_a_tool_one_is_not_granted(client, teams):
    client.force_login(teams["alice"])
    response = client.post("/my/agents/", {"name": "Root", "tools": ["current_time", "shell_exec"]})
    assert response.status_code == 400
    assert "shell_exec" in response.content.decode()
    assert not Agent.objects.filter(name="Root").exists()
    response = client.post("/my/agents/", {"name": "Root", "sources": ["no-such-source"]})
    assert response.status_code == 400 and not Agent.objects.filter(name="Root").exists()
    # Editing one's own profile cannot add it either.
    agent = my_agent_save(user=teams["alice"], draft=AgentDraft(name="Mine", tools=[]))
    response = client.post(f"/my/agents/{agent.pk}/", {"name": "Mine", "tools": ["shell_exec"]})
    assert response.status_code == 400
    agent.refresh_from_db()
    assert agent.tools == []


@pytest.mark.modes
def test_a_shared_agent_does_not_lend_its_authors_grants(worker, teams, llm, provider):
    """alice is also in "ops", granted shell_exec, and puts it in a profile she shares with
    "support". carol (support, no shell_exec) picks it: the model is not offered shell_exec,
    and its call is refused at binding for want of carol's grant; nothing runs."""
    alice, carol, support = teams["alice"], teams["carol"], teams["support"]
    ops = Group.objects.create(name="ops")
    ToolGrant.objects.create(group=ops, kind="function", name="shell_exec")
    alice.groups.add(ops)
    agent = my_agent_save(
        user=alice,
        draft=AgentDraft(name="Ops kit", tools=["shell_exec", "current_time"], groups=[support.pk]),
    )
    conversation = Conversation.objects.create(owner=carol, agent=agent)
    llm.script(Reply(calls=[Call("shell_exec", {"command": "id"})]), Reply(text="done"))
    turn = wait_turn(turn_start(conversation=conversation, user_id=carol.pk, text="go").pk)
    assert turn.status == "succeeded", turn.error
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert offered == {"current_time"}
    call = ToolCall.objects.get(turn=turn)
    assert (call.tool, call.status, call.policy_verdict) == ("shell_exec", "denied", "not_granted")
    assert call.started_at is None
    # Slash commands through the same conversation: refused the same way.
    slash = turn_start(
        conversation=conversation, user_id=carol.pk, text='/shell_exec {"command": "id"}'
    )
    denied = ToolCall.objects.get(turn=wait_turn(slash.pk))
    assert (denied.status, denied.policy_verdict) == ("denied", "not_granted")


def test_a_token_cannot_name_anothers_private_agent(client, teams, private):
    client.force_login(teams["carol"])
    response = client.post("/tokens/", {"name": "mine", "agent": str(private["agent"].pk)})
    assert response.status_code == 400
    assert not teams["carol"].api_tokens.exists()
