"""The agent-profile pages: staff only, tools chosen by checkboxes (all / a group / single
functions), unknown names refused with a clear error and nothing lost."""

from __future__ import annotations

from typing import Any

from chat_app.models import Agent, Provider
from chat_app.services.agents import agent_default
from tools_app.models import AuditRecord


def _form(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "Ops",
        "description": "Looks at things",
        "system_prompt": "Be brief.",
        "provider": "",
        "model": "",
        "kind": "tool_calling",
        "max_rounds": 0,
        "max_iterations": 0,
        "max_calls_per_turn": 10,
        "max_calls_per_conversation": 200,
        "tool_budgets": "",
    }
    data.update(over)
    return data


def test_a_member_gets_403_on_every_agent_url_and_changes_nothing(member_client, client, db):
    agent = agent_default()
    before = sorted(Agent.objects.values_list("name", "all_tools", "is_default"))
    urls = ["/agents/", "/agents/new/", f"/agents/{agent.pk}/"]
    for url in urls:
        assert member_client.get(url).status_code == 403, url
        assert client.get(url).status_code == 302, url
    for url in ("/agents/new/", f"/agents/{agent.pk}/", f"/agents/{agent.pk}/delete/"):
        assert member_client.post(url, _form(name="Hijack", all_tools="on")).status_code == 403
    assert sorted(Agent.objects.values_list("name", "all_tools", "is_default")) == before
    assert 'href="/agents/"' not in member_client.get("/tokens/").content.decode()


def test_create_an_agent_with_a_group_and_single_functions_and_see_it_back(admin_client, db):
    agent_default()
    provider = Provider.objects.create(name="p", model="m")
    page = admin_client.get("/agents/new/")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'name="tool_group" value="memory"' in text and 'name="tool" value="current_time"' in text
    response = admin_client.post(
        "/agents/new/",
        {
            **_form(provider=provider.pk, model="m2", tool_budgets="web_search: 4\n"),
            "tool_group": ["memory"],
            "tool": ["current_time", "web_search"],
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    agent = Agent.objects.get(name="Ops")
    assert not agent.all_tools and agent.provider == provider and agent.model == "m2"
    assert agent.tools == sorted(
        [
            "current_time",
            "web_search",
            "memory_save",
            "memory_search",
            "memory_core_get",
            "memory_core_update",
            "memory_core_delete",
        ]
    )
    assert agent.tool_budgets == {"web_search": 4}
    text = admin_client.get(response.url).content.decode()
    assert 'value="memory" id="group-memory" checked' in text
    assert 'value="current_time" id="tool-current_time" checked' in text
    assert 'value="research" id="group-research" data-indeterminate' in text
    assert 'value="shell_exec" id="tool-shell_exec">' in text  # not ticked
    assert "web_search: 4" in text
    record = AuditRecord.objects.get(group="agents")
    assert record.tool == "Ops" and "tools" in record.detail["changed"]

    # Every tool; default flag moves here.
    admin_client.post(response.url, {**_form(all_tools="on", is_default="on"), "tool": ["x"]})
    agent.refresh_from_db()
    assert agent.all_tools and agent.tools == [] and agent.is_default
    assert list(Agent.objects.filter(is_default=True)) == [agent]


def test_unknown_tool_names_are_refused_and_the_form_keeps_what_was_typed(admin_client, db):
    agent = agent_default()
    for extra, error in (
        ({"tool": ["current_time", "rm_rf_everything"]}, "unknown tool: rm_rf_everything"),
        ({"tool_group": ["nope"]}, "unknown tool group: nope"),
        ({"tool": ["current_time"], "tool_budgets": "ghost: 3"}, "unknown tool: ghost"),
        ({"tool": ["current_time"], "tool_budgets": "web_search eight"}, "line 1:"),
        ({}, "choose at least one tool"),
    ):
        response = admin_client.post(
            f"/agents/{agent.pk}/", {**_form(name="General", system_prompt="typed"), **extra}
        )
        text = response.content.decode()
        assert response.status_code == 400, extra
        assert error in text and "typed" in text
    agent.refresh_from_db()
    assert agent.all_tools and agent.system_prompt == ""
    # A profile naming a tool that is gone shows it ticked under "Not registered".
    Agent.objects.filter(pk=agent.pk).update(all_tools=False, tools=["current_time", "gone_tool"])
    text = admin_client.get(f"/agents/{agent.pk}/").content.decode()
    assert "Not registered" in text and 'value="gone_tool"' in text


def test_limits_are_validated_and_delete_keeps_one_default(admin_client, db):
    general = agent_default()
    Agent.objects.exclude(pk=general.pk).delete()  # the shipped Researcher
    bad = admin_client.post(
        "/agents/new/", {**_form(max_rounds=3, max_iterations=5), "tool": ["current_time"]}
    )
    assert bad.status_code == 400 and "must be above 5" in bad.content.decode()
    ok = admin_client.post("/agents/new/", {**_form(), "tool": ["current_time"]})
    ops = Agent.objects.get(name="Ops")
    assert ok.status_code == 302
    assert admin_client.post(f"/agents/{general.pk}/delete/").status_code == 302
    ops.refresh_from_db()
    assert ops.is_default and not Agent.objects.filter(pk=general.pk).exists()
    refused = admin_client.post(f"/agents/{ops.pk}/delete/", follow=True)
    assert "the last agent profile cannot be deleted" in refused.content.decode()
    assert Agent.objects.filter(pk=ops.pk).exists()
