"""Which kind runs a profile: one ``AgentKind`` per value of ``Agent.kind``."""

from __future__ import annotations

from chat_app.agent_kinds.base import AgentKind
from chat_app.agent_kinds.chat import ChatKind
from chat_app.agent_kinds.schema_guided import ReasoningAsToolKind, SchemaGuidedKind
from chat_app.models import Agent, Conversation, Turn
from chat_app.services.agents import agent_for_conversation
from tools_app.models import ToolCall

KINDS: dict[str, type[AgentKind]] = {
    Agent.Kind.TOOL_CALLING: ChatKind,
    Agent.Kind.SCHEMA_GUIDED: SchemaGuidedKind,
    Agent.Kind.REASONING_AS_TOOL: ReasoningAsToolKind,
}


def kind_for(agent: Agent) -> AgentKind:
    # A value this code does not know (a row written by a newer release) runs as plain chat.
    return KINDS.get(agent.kind, ChatKind)(agent)


def kind_for_conversation(conversation: Conversation) -> AgentKind:
    """The kind of the profile the conversation uses now."""
    return kind_for(agent_for_conversation(conversation))


def kind_for_turn(turn: Turn) -> AgentKind:
    return kind_for_conversation(turn.conversation)


def approved_call_hold(call: ToolCall) -> bool:
    """For the approval of a call (``tools_app.services.approval``): True when the kind of
    the call's conversation holds it instead of sending it to a worker."""
    if call.turn_id is None or call.conversation_id is None:
        return False
    conversation = Conversation.objects.get(pk=call.conversation_id)
    return kind_for_conversation(conversation).hold(call)
