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
from tools_app.registry import GROUPS, BaseTool
from tools_app.runtime import BindContext
from tools_app.services.binding import CallLimits, CallRequest, toolcall_bind, toolcall_dispatch
from tools_app.services.decision import usable_tools


def help_text(user_id: int | None = None, topic: str = "") -> str:
    """The ``/help`` notice, kept short: the tools the person may call, by group, each as it
    is typed (``/file_read <path>`` where plain text is its argument); ``/help <tool>`` tells
    one tool's description and arguments."""
    tools = usable_tools(user_id, None)  # what the person can run now, as offered
    if topic:
        return _tool_help(tools, topic.strip().lstrip("/"))
    lines = [
        _(
            "**Slash commands** call a tool directly, no LLM needed: `/tool text` where a "
            "tool takes one text argument, `/tool {JSON}` otherwise. `/help tool` tells more "
            "about one."
        ),
        "",
    ]
    by_group: dict[str, list[str]] = {}
    for tool in tools:
        by_group.setdefault(tool.tool_group, []).append(_usage(tool))
    for name, usages in by_group.items():
        group = GROUPS.get(name)
        label = text_localized(group.label) if group is not None else name
        lines.append(f"- **{label}**: " + ", ".join(usages))
    if len(lines) == 2:
        lines.append(_("- no tools are enabled"))
    return "\n".join(lines)


def _usage(tool: type[BaseTool]) -> str:
    field = tool.plain_text_field()
    name = tool.tool_slash or tool.tool_name
    return f"`/{name} <{field}>`" if field is not None else f"`/{name}`"


def _tool_help(tools: list[type[BaseTool]], word: str) -> str:
    tool = next((t for t in tools if word in (t.tool_name, t.tool_slash)), None)
    if tool is None:
        return _("No tool `%(word)s` you may call. Type `/help` to list the tools.") % {
            "word": word
        }
    example = json.dumps(tool.example(), ensure_ascii=False)
    lines = [f"{_usage(tool)} — {text_localized(tool.description())}", ""]
    if tool.plain_text_field() is None or tool.tool_slash:
        lines.append(
            _("Example: `/%(name)s %(example)s`") % {"name": tool.tool_name, "example": example}
        )
    else:
        lines.append(
            _("Or with JSON: `/%(name)s %(example)s`")
            % {"name": tool.tool_name, "example": example}
        )
    return "\n".join(lines)


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
) -> tuple[Turn | None, bool]:
    """Run ``text`` (``/tool args``) as a turn of one call. ``scope``: the tool list of what
    started the turn (a subagent, a schedule); the call binds within it and within the agent's
    limits, as the model of that turn would. A person's own command has none.

    Returns the turn (None for ``/help`` and unknown commands) and whether its call went to a
    worker. One that did is moved on by the worker once the call's card is sent; otherwise
    (refused at binding, or waiting for an approval) the caller advances the turn."""
    word, _sep, rest = text[1:].partition(" ")
    word = word.strip()
    call = None
    dispatched = False
    with transaction.atomic():
        user_message = Message.objects.create(
            conversation=conversation, role=Message.Role.USER, content=text, origin=origin
        )
        tool = selectors.tool_for_slash(word) if word != "help" else None
        if tool is None:
            notice = (
                help_text(user_id, rest)
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
            dispatched = True
    return turn, dispatched
