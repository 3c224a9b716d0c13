"""The prompt library: a person's own prompts and those shared with their groups (issue 39,
item 9). Typing ``/`` in the message box offers them beside the slash commands
(``slash_menu``); picking one puts its body in the box — nothing runs.

Shared as a member's agent profile is: with groups the owner belongs to, whose sharing an admin
has not switched off (``member_agents.shared_with_checked``). Staff see their own and those
shared with them, like everyone (a library of everyone's prompts would bury their own)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from chat_app.models import Prompt
from chat_app.services.member_agents import (
    MemberAgentError,
    member_group_ids,
    shared_with_checked,
    sharing_forbidden_ids,
)
from infra import access
from infra.prepared import Prepared
from tools_app import selectors
from tools_app.i18n import text_localized
from tools_app.services.grants import grants_narrow, user_groups

SHORTCUT = re.compile(r"^[\w-]{1,32}$", re.UNICODE)
BODY_LIMIT = 20_000


class PromptError(MemberAgentError):
    pass


@dataclass
class PromptDraft:
    title: str
    body: str
    shortcut: str = ""
    groups: list[int] = field(default_factory=list)


def prompts_for(user: Any) -> QuerySet[Prompt]:
    """The person's own prompts and those shared with one of their groups."""
    allowed = user_groups(user).exclude(sharing__forbidden=True)
    return (
        Prompt.objects.filter(Q(owner=user) | Q(groups__in=allowed))
        .select_related("owner")
        .distinct()
        .order_by("title", "id")
    )


def prompt_visible(user: Any, prompt: Prompt) -> bool:
    shared = set(prompt.groups.values_list("pk", flat=True)) - sharing_forbidden_ids()
    return access.personal_visible(
        user,
        owner_id=prompt.owner_id,
        shared_with=shared,
        member_of=member_group_ids(user),
        staff_sees_all=False,
    )


def my_prompt(user: Any, prompt_id: int) -> Prompt | None:
    """The person's own prompt (None: not there, or someone else's — the caller answers 404)."""
    prompt = Prompt.objects.filter(pk=prompt_id).first()
    if prompt is None or not access.personal_changeable(user, owner_id=prompt.owner_id):
        return None
    return prompt


def prompt_save(*, user: Any, draft: PromptDraft, prompt: Prompt | None = None) -> Prompt:
    if prompt is not None and not access.personal_changeable(user, owner_id=prompt.owner_id):
        raise PromptError(_("That prompt is not yours."))
    title = draft.title.strip()
    body = draft.body.strip()
    shortcut = draft.shortcut.strip().lstrip("/")
    if not title or not body:
        raise PromptError(_("A prompt needs a title and a text."))
    if len(title) > 100 or len(body) > BODY_LIMIT:
        raise PromptError(_("The title or the text is too long."))
    if shortcut and not SHORTCUT.match(shortcut):
        raise PromptError(_("A shortcut is one word: letters, digits, - and _."))
    groups = shared_with_checked(user, draft.groups)
    target = prompt or Prompt(owner=user)
    target.title, target.body, target.shortcut = title, body, shortcut
    try:
        with transaction.atomic():
            target.save()
            target.groups.set(groups)
    except IntegrityError:
        raise PromptError(
            _("You have a prompt with the shortcut “%(shortcut)s” already.")
            % {"shortcut": shortcut}
        ) from None
    return target


def prompt_delete(*, user: Any, prompt: Prompt) -> None:
    if not access.personal_changeable(user, owner_id=prompt.owner_id):
        raise PromptError(_("That prompt is not yours."))
    prompt.delete()


def prompt_draft_of(prompt: Prompt) -> PromptDraft:
    return PromptDraft(
        title=prompt.title,
        body=prompt.body,
        shortcut=prompt.shortcut,
        groups=list(prompt.groups.values_list("pk", flat=True)),
    )


# The slash menu's prompts, on every chat page: compiled once per process (infra.prepared).
MENU_PROMPTS = 200
_MENU_PROMPTS = Prepared(lambda user_id: prompts_for(user_id)[:MENU_PROMPTS], user_id=int)


def slash_menu(user: Any) -> dict[str, list[dict[str, str]]]:
    """What typing ``/`` in the message box offers: the slash commands (the enabled tools the
    person is granted, as ``/help`` lists them) and their prompts."""
    granted = grants_narrow(user.pk, None)

    def build() -> list[dict[str, str]]:
        return [
            {"name": "help", "alias": "", "hint": _("List the slash commands"), "example": ""},
            *(
                {
                    "name": tool.tool_name,
                    "alias": tool.tool_slash or "",
                    "hint": text_localized(tool.description()).split("\n")[0][:120],
                    "example": json.dumps(tool.example(), ensure_ascii=False)[:200],
                }
                for tool in selectors.enabled_tools(granted)
            ),
        ]

    # The same for everyone with the same grants, in one language, while the configuration
    # stands (the page pins it): built once, not on every page.
    key = ("slash commands", get_language(), None if granted is None else frozenset(granted))
    commands = selectors.config_memo(key, build)
    prompts = [
        {
            "title": p.title,
            "shortcut": p.shortcut,
            "body": p.body,
            "owner": "" if p.owner_id == user.pk else p.owner.get_username(),
        }
        for p in _MENU_PROMPTS.rows(user_id=int(user.pk))
    ]
    return {"commands": commands, "prompts": prompts}
