"""Slash commands: call a tool directly, through the same binding, sandbox and trace."""

from __future__ import annotations

import json

from django.db import transaction
from django.utils.translation import gettext as _

from chat_app.events import message_publish, turn_publish
from chat_app.models import Conversation, Message, Turn
from chat_app.services.agents import agent_for_conversation
from tools_app import selectors
from tools_app.i18n import text_localized
from tools_app.models import ToolCall
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext
from tools_app.services.binding import CallLimits, CallRequest, toolcall_bind, toolcall_dispatch
from tools_app.services.grants import grants_narrow

HELP_DESCRIPTION_CHARS = 80
HELP_EXAMPLE_CHARS = 60


def help_text(user_id: int | None = None) -> str:
    """The ``/help`` notice, kept short: a line per tool the person may call, its plain-text
    argument or a short JSON example, and the first sentence of its description."""
    lines = [
        _(
            "**Slash commands** call a tool directly, no LLM needed: `/tool text` where a "
            "tool takes one text argument, `/tool {JSON}` otherwise."
        ),
        "",
    ]
    for tool in selectors.enabled_tools(grants_narrow(user_id, None)):
        field = tool.plain_text_field()
        if field is not None:
            usage = f"`/{tool.tool_slash or tool.tool_name} <{field}>`"
        else:
            example = json.dumps(tool.example(), ensure_ascii=False)
            if len(example) > HELP_EXAMPLE_CHARS:
                example = "{…}"
            usage = f"`/{tool.tool_name} {example}`"
        alias = (
            (_(" (or `/%(alias)s …`)") % {"alias": tool.tool_slash})
            if tool.tool_slash and field is None
            else ""
        )
        lines.append(f"- {usage}{alias} — {_first_sentence(text_localized(tool.description()))}")
    if len(lines) == 2:
        lines.append(_("- no tools are enabled"))
    return "\n".join(lines)


def _first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].rstrip(".")
    if len(head) > HELP_DESCRIPTION_CHARS:
        head = head[:HELP_DESCRIPTION_CHARS].rsplit(" ", 1)[0].rstrip(",;:(") + "…"
    return head


def _arguments(tool: type[BaseTool], rest: str) -> tuple[str | dict[str, object], str | None]:
    rest = rest.strip()
    if not rest or rest.startswith("{"):
        return rest, None
    try:
        return tool.from_shorthand(rest), None
    except ValueError as exc:
        return rest, str(exc)


def _limits(conversation: Conversation) -> CallLimits:
    agent = agent_for_conversation(conversation)
    return CallLimits(
        per_turn=agent.max_calls_per_turn, per_conversation=agent.max_calls_per_conversation
    )


def slash_run(
    *,
    conversation: Conversation,
    user_id: int,
    text: str,
    origin: str = "",
    source: str = Turn.Source.CHAT,
    scope: list[str] | None = None,
    branch_of: Turn | None = None,
    trace: str = "",
    schedule_id: int | None = None,
) -> Turn | None:
    """Run ``text`` (``/tool args``) as a turn of one call. ``scope``: the tool list of what
    started the turn (a subagent, a schedule); the call binds within it and within the agent's
    limits, as the model of that turn would. A person's own command has none."""
    word, _sep, rest = text[1:].partition(" ")
    word = word.strip()
    call = None
    with transaction.atomic():
        user_message = Message.objects.create(
            conversation=conversation, role=Message.Role.USER, content=text, origin=origin
        )
        tool = selectors.tool_for_slash(word) if word != "help" else None
        if tool is None:
            notice = (
                help_text(user_id)
                if word == "help"
                else _("Unknown command `/%(word)s`. Type `/help` to list the tools.")
                % {"word": word}
            )
            reply = Message.objects.create(
                conversation=conversation, role=Message.Role.NOTICE, content=notice
            )
            turn = None
        else:
            turn = Turn(
                conversation=conversation,
                user_id=user_id,
                kind=Turn.Kind.SLASH,
                source=source,
                phase=Turn.Phase.TOOLS,
                tool_scope=scope,
                schedule_id=schedule_id,
                trace_context=trace,
            )
            if branch_of is not None:  # an edited command: beside the turn it replaces
                turn.branch_from(branch_of)
            turn.save()
            user_message.turn = turn
            user_message.save(update_fields=["turn"])
            arguments, error = _arguments(tool, rest)
            call = toolcall_bind(
                request=CallRequest(tool=tool.tool_name, arguments=arguments, parse_error=error),
                ctx=BindContext(
                    user_id=user_id,
                    conversation_id=conversation.pk,
                    # A command an API client sent is the API's, like its model's calls.
                    source=ToolCall.Source.API if source == Turn.Source.API else "slash",
                    scope=scope,
                ),
                turn_id=turn.pk,
                message_id=user_message.pk,
                limits=_limits(conversation) if scope is not None else None,
            )
            reply = None
    message_publish(user_message)
    if reply is not None:
        message_publish(reply)
    if turn is not None and call is not None:
        turn_publish(turn)
        # Dispatched only now: the page must know the message before its card changes.
        if call.status == call.Status.QUEUED:
            toolcall_dispatch(call)
    return turn  # the caller advances it: a refused call finishes the turn at once
