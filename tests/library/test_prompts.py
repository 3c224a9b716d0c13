"""The prompt library (issue 39, item 9): personal and shared prompts, offered in the message
box's "/" menu beside the slash commands the person may call."""

from __future__ import annotations

import pytest

from chat_app.models import Prompt
from chat_app.services.member_agents import MemberAgentError, group_sharing_set
from chat_app.services.prompts import (
    PromptDraft,
    prompt_delete,
    prompt_save,
    prompt_visible,
    prompts_for,
    slash_menu,
)
from tools_app.services.grants import everyone_group

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_prompt_is_its_owners_until_shared(teams):
    alice, bob, carol = teams["alice"], teams["bob"], teams["carol"]
    prompt = prompt_save(
        user=alice, draft=PromptDraft(title="Standup", body="Summarise yesterday.", shortcut="su")
    )
    assert list(prompts_for(alice)) == [prompt]
    assert list(prompts_for(carol)) == [] and not prompt_visible(carol, prompt)
    prompt_save(
        user=alice,
        prompt=prompt,
        draft=PromptDraft(
            title="Standup", body="Summarise yesterday.", groups=[teams["support"].pk]
        ),
    )
    assert list(prompts_for(carol)) == [prompt] and prompt_visible(carol, prompt)
    assert list(prompts_for(bob)) == [] and not prompt_visible(bob, prompt)
    group_sharing_set(group=teams["support"], forbidden=True)
    assert list(prompts_for(carol)) == [] and not prompt_visible(carol, prompt)


def test_admins_see_their_own_and_those_shared_with_them(teams, staff_user):
    prompt = prompt_save(user=teams["alice"], draft=PromptDraft(title="Mine", body="x"))
    assert list(prompts_for(staff_user)) == [] and not prompt_visible(staff_user, prompt)
    prompt_save(
        user=teams["alice"],
        prompt=prompt,
        draft=PromptDraft(title="Mine", body="x", groups=[everyone_group().pk]),
    )
    assert list(prompts_for(staff_user)) == [prompt]


def test_it_refuses_what_a_prompt_may_not_be(teams):
    alice = teams["alice"]
    for draft in (
        PromptDraft(title="", body="x"),
        PromptDraft(title="t", body=""),
        PromptDraft(title="t", body="x", shortcut="two words"),
        PromptDraft(title="t", body="x", groups=[teams["sales"].pk]),
    ):
        with pytest.raises(MemberAgentError):
            prompt_save(user=alice, draft=draft)
    prompt_save(user=alice, draft=PromptDraft(title="t", body="x", shortcut="/t1"))
    assert Prompt.objects.get().shortcut == "t1"
    with pytest.raises(MemberAgentError, match="shortcut"):
        prompt_save(user=alice, draft=PromptDraft(title="u", body="y", shortcut="t1"))


def test_the_owner_alone_edits_and_deletes(teams, staff_user):
    prompt = prompt_save(user=teams["alice"], draft=PromptDraft(title="t", body="x"))
    for other in (teams["carol"], staff_user):
        with pytest.raises(MemberAgentError):
            prompt_save(user=other, prompt=prompt, draft=PromptDraft(title="mine", body="y"))
        with pytest.raises(MemberAgentError):
            prompt_delete(user=other, prompt=prompt)
    prompt_delete(user=teams["alice"], prompt=prompt)
    assert not Prompt.objects.exists()


def test_the_slash_menu_lists_granted_commands_and_visible_prompts(teams):
    alice, carol = teams["alice"], teams["carol"]
    prompt_save(
        user=alice,
        draft=PromptDraft(title="Standup", body="Summarise.", groups=[teams["support"].pk]),
    )
    prompt_save(user=alice, draft=PromptDraft(title="Private", body="secret"))
    menu = slash_menu(carol)
    names = {c["name"] for c in menu["commands"]}
    assert {"help", "current_time", "file_read", "memory_search"} <= names
    assert "shell_exec" not in names
    assert menu["prompts"] == [
        {"title": "Standup", "shortcut": "", "body": "Summarise.", "owner": "alice"}
    ]
    assert [p["title"] for p in slash_menu(alice)["prompts"]] == ["Private", "Standup"]


def test_the_menus_commands_follow_grants_and_language_where_the_page_pins_them(teams, staff_user):
    # The page builds the commands once per configuration, language and grants (a memo under
    # the pinned configuration): a grant change or another language is a new menu at once.
    from django.utils import translation

    from platform_app.people.services import group_grants_set
    from tools_app.selectors import config_pinned

    carol, bob = teams["carol"], teams["bob"]

    def names(user):
        with config_pinned():
            return {c["name"] for c in slash_menu(user)["commands"]}

    assert "file_read" in names(carol) and "file_read" not in names(bob)
    group_grants_set(actor=staff_user, group=teams["support"], functions=["current_time"])
    assert "file_read" not in names(carol) and "current_time" in names(carol)
    with translation.override("ru"), config_pinned():
        hint = slash_menu(carol)["commands"][0]["hint"]
    with config_pinned():
        assert slash_menu(carol)["commands"][0]["hint"] != hint  # /help's line, translated
