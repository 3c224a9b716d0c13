"""A member's own agent profiles (issue 39, item 9): built from what they are granted, private
until shared with groups they belong to, hidden again from a group an admin closes to sharing,
and every profile for admins."""

from __future__ import annotations

import pytest

from chat_app.models import Agent, Provider
from chat_app.services.agents import agent_granted, agents_for
from chat_app.services.member_agents import (
    AgentDraft,
    MemberAgentError,
    agent_draft_of,
    agent_options,
    agent_visible,
    group_sharing_set,
    my_agent_delete,
    my_agent_save,
    shared_with_me,
)
from tools_app.models import ToolFunctionConfig
from tools_app.services.grants import everyone_group

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_it_offers_only_the_enabled_tools_the_member_is_granted(teams):
    ToolFunctionConfig.objects.create(name="file_read", enabled=False)
    options = agent_options(teams["alice"])
    assert options.tool_names() == {"current_time", "memory_search"}
    assert [g.name for g in options.share_groups] == ["Everyone", "support"]
    assert agent_options(teams["bob"]).tool_names() == {"current_time"}


def test_it_offers_each_providers_model_and_allowed_models(teams):
    provider = Provider.objects.create(
        name="local", model="small", allowed_models=["large"], is_default=True
    )
    values = [m.value for m in agent_options(teams["alice"]).models]
    assert values == [f"{provider.pk}:small", f"{provider.pk}:large"]


def test_a_member_builds_a_private_agent(teams, staff_user):
    alice, bob, carol = teams["alice"], teams["bob"], teams["carol"]
    agent = my_agent_save(
        user=alice,
        draft=AgentDraft(
            name="Helpdesk", system_prompt="Be brief.", tools=["current_time", "memory_search"]
        ),
    )
    assert agent.owner == alice and agent.all_tools is False
    assert agent.tools == ["current_time", "memory_search"]
    assert agent.allowed_tools() == ["current_time", "memory_search"]
    assert agent_granted(alice, agent) and agent_visible(alice, agent)
    for other in (bob, carol):
        assert not agent_granted(other, agent) and not agent_visible(other, agent)
    assert agent_granted(staff_user, agent) and agent_visible(staff_user, agent)


def test_sharing_shows_it_to_the_groups_members_only(teams):
    alice, bob, carol = teams["alice"], teams["bob"], teams["carol"]
    agent = my_agent_save(
        user=alice,
        draft=AgentDraft(name="Helpdesk", tools=["current_time"], groups=[teams["support"].pk]),
    )
    assert agent_granted(carol, agent) and agent_visible(carol, agent)
    assert list(shared_with_me(carol)) == [agent]
    assert not agent_granted(bob, agent) and not agent_visible(bob, agent)
    assert list(shared_with_me(bob)) == []
    assert list(shared_with_me(alice)) == []  # one's own is not "shared with you"
    # Everyone: every member sees it.
    my_agent_save(
        user=alice,
        agent=agent,
        draft=AgentDraft(name="Helpdesk", tools=["current_time"], groups=[everyone_group().pk]),
    )
    assert agent_granted(bob, agent) and agent_visible(bob, agent)


def test_it_refuses_sharing_with_a_group_one_is_not_in(teams):
    with pytest.raises(MemberAgentError):
        my_agent_save(
            user=teams["alice"],
            draft=AgentDraft(name="Sneaky", tools=["current_time"], groups=[teams["sales"].pk]),
        )
    assert not Agent.objects.filter(name="Sneaky").exists()


def test_an_admin_closing_a_group_to_sharing_refuses_and_hides(teams):
    alice, carol, support = teams["alice"], teams["carol"], teams["support"]
    agent = my_agent_save(
        user=alice, draft=AgentDraft(name="Helpdesk", tools=["current_time"], groups=[support.pk])
    )
    group_sharing_set(group=support, forbidden=True)
    assert not agent_granted(carol, agent) and not agent_visible(carol, agent)
    assert [g.name for g in agent_options(alice).share_groups] == ["Everyone"]
    with pytest.raises(MemberAgentError):
        my_agent_save(
            user=alice,
            agent=agent,
            draft=AgentDraft(name="Helpdesk", tools=["current_time"], groups=[support.pk]),
        )
    # An admin's own profile given to the group is a grant, not a share: it stays.
    admins = Agent.objects.create(name="Team profile")
    admins.groups.add(support)
    assert agent_granted(carol, admins)
    group_sharing_set(group=support, forbidden=False)
    assert agent_granted(carol, agent)


def test_it_refuses_a_tool_the_member_is_not_granted(teams):
    with pytest.raises(MemberAgentError, match="shell_exec"):
        my_agent_save(
            user=teams["alice"],
            draft=AgentDraft(name="Root", tools=["current_time", "shell_exec"]),
        )
    assert not Agent.objects.filter(name="Root").exists()


def test_it_refuses_a_model_not_offered_and_a_taken_name(teams):
    Provider.objects.create(name="local", model="small", is_default=True)
    with pytest.raises(MemberAgentError):
        my_agent_save(user=teams["alice"], draft=AgentDraft(name="A", model="999:gpt-9"))
    Agent.objects.create(name="Taken")
    with pytest.raises(MemberAgentError, match="exists already"):
        my_agent_save(user=teams["alice"], draft=AgentDraft(name="Taken"))


def test_the_owner_alone_edits_and_deletes(teams, staff_user):
    agent = my_agent_save(user=teams["alice"], draft=AgentDraft(name="Mine"))
    for other in (teams["carol"], staff_user):
        with pytest.raises(MemberAgentError):
            my_agent_save(user=other, agent=agent, draft=AgentDraft(name="Theirs"))
        with pytest.raises(MemberAgentError):
            my_agent_delete(user=other, agent=agent)
    my_agent_delete(user=teams["alice"], agent=agent)
    assert not Agent.objects.filter(pk=agent.pk).exists()


def test_the_form_values_of_a_saved_agent_round_trip(teams):
    provider = Provider.objects.create(name="local", model="small", is_default=True)
    draft = AgentDraft(
        name="Helpdesk",
        description="Answers tickets",
        system_prompt="Be brief.",
        model=f"{provider.pk}:small",
        tools=["current_time"],
        groups=[teams["support"].pk],
    )
    agent = my_agent_save(user=teams["alice"], draft=draft)
    assert agent_draft_of(agent, agent_options(teams["alice"])) == draft
    assert agents_for(teams["carol"]).filter(pk=agent.pk).exists()


def test_a_conversation_of_a_profile_no_longer_shared_goes_on_with_the_default(teams):
    from chat_app.models import Conversation
    from chat_app.services.agents import agent_default, agent_for_conversation

    alice, carol, support = teams["alice"], teams["carol"], teams["support"]
    agent = my_agent_save(
        user=alice, draft=AgentDraft(name="Helpdesk", tools=["current_time"], groups=[support.pk])
    )
    theirs = Conversation.objects.create(owner=carol, agent=agent)
    own = Conversation.objects.create(owner=alice, agent=agent)
    assert agent_for_conversation(theirs) == agent
    my_agent_save(user=alice, agent=agent, draft=AgentDraft(name="Helpdesk", tools=[]))
    assert agent_for_conversation(theirs) == agent_default()
    assert agent_for_conversation(own) == agent  # the owner's own, shared or not
    my_agent_save(user=alice, agent=agent, draft=AgentDraft(name="Helpdesk", groups=[support.pk]))
    group_sharing_set(group=support, forbidden=True)
    assert agent_for_conversation(theirs) == agent_default()


def test_a_source_gives_the_agent_every_tool_of_it_the_member_may_use(teams, monkeypatch):
    from chat_app.services import member_agents
    from chat_app.services.member_agents import SourceOption

    alice = teams["alice"]
    options = agent_options(alice)
    options.sources.append(SourceOption("wiki", ("wiki_search", "wiki_page")))
    monkeypatch.setattr(member_agents, "agent_options", lambda user: options)
    agent = my_agent_save(
        user=alice, draft=AgentDraft(name="Wiki", tools=["current_time"], sources=["wiki"])
    )
    assert agent.tools == ["current_time", "wiki_search", "wiki_page"]
    draft = agent_draft_of(agent, options)
    assert (draft.tools, draft.sources) == (["current_time"], ["wiki"])


def test_an_admins_grants_leave_members_shares_alone(teams, staff_user):
    from platform_app.people.access import access_export, access_import
    from platform_app.people.services import group_grants_set

    support = teams["support"]
    shared = my_agent_save(
        user=teams["alice"],
        draft=AgentDraft(name="Helpdesk", tools=["current_time"], groups=[support.pk]),
    )
    admins = Agent.objects.create(name="Team profile")
    group_grants_set(actor=staff_user, group=support, functions=["current_time"], agents=[])
    assert list(support.agent_profiles.all()) == [shared]
    access_import("groups:\n  - name: support\n    agents: [Team profile]\n", actor=staff_user)
    assert set(support.agent_profiles.all()) == {shared, admins}
    assert "Helpdesk" not in access_export()  # a share is not a grant
    with pytest.raises(Exception, match="Helpdesk"):  # nor can a grant name a member's profile
        access_import("groups:\n  - name: sales\n    agents: [Helpdesk]\n", actor=staff_user)
