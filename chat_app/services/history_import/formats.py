"""The three exports read here, as pydantic models, and each one's reading into ``Thread``s.

- **Open WebUI** ("Export chats", or one chat's JSON download): a list of chat rows, each with
  ``chat.history.messages`` (message id → {id, parentId, childrenIds, role, content,
  timestamp, model/models}) and ``chat.history.currentId`` (the message shown last).
- **ChatGPT** (``conversations.json`` of the data export): a list of conversations, each with
  ``mapping`` (node id → {id, message | null, parent, children}) and ``current_node``; a
  message has ``author.role``, ``content.content_type`` and ``content.parts``.
- **LibreChat** (a conversation's JSON export): ``conversationId``, ``title``, ``endpoint`` and
  ``messages`` — a flat list linked by ``parentMessageId``, or with ``recursive: true`` a tree
  whose messages hold their ``children`` (LibreChat's own importer also reads ``messagesTree``).

Unknown fields are ignored (each product adds fields every release); the fields read here are
checked strictly (types, required), and a file that fails is refused saying where. Only text
is kept: tool calls, tool output, reasoning, images and system prompts are skipped and counted
by reason — nothing in an export is run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from django.utils.translation import gettext as _
from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_TEXT = 1_000_000  # characters of one message
MAX_KEY = 200  # characters of an id

# Reasons a message is skipped (the summary's words; translated where it is shown).
SKIP_SYSTEM = "system prompt"
SKIP_TOOL = "tool call or tool output"
SKIP_REASONING = "reasoning"
SKIP_IMAGE = "image or file"
SKIP_HIDDEN = "hidden message"
SKIP_EMPTY = "empty message"
SKIP_OTHER = "other content"


class FormatError(ValueError):
    """The file is not a valid export of the format; the message says where."""


@dataclass
class Node:
    """One message of an export, in the shape every format is read into."""

    key: str
    parent: str | None
    role: Literal["user", "assistant"] | None  # None: skipped (its children move up)
    text: str = ""
    at: datetime | None = None
    skipped: str = ""  # why, when role is None


@dataclass
class Thread:
    """One conversation of an export."""

    source_id: str
    title: str
    created: datetime | None
    updated: datetime | None
    nodes: list[Node]
    current: str | None
    where: str  # its place in the file, for errors
    skipped_parts: dict[str, int] = field(default_factory=dict)
    # Set once checked (importer._kept_tree): the kept messages, their children, the shown one.
    tree: Any = None


class _Model(BaseModel):
    # Unknown fields are ignored; the fields read are strict (no "1" for 1, no 1 for "1").
    model_config = ConfigDict(extra="ignore", strict=True)


def Key() -> Any:  # noqa: N802 (reads as a type)
    return Field(min_length=1, max_length=MAX_KEY)


def _epoch(value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        # Open WebUI writes seconds, some of its versions nanoseconds for chats.
        while value > 1e11:
            value /= 1000
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _where(prefix: str, loc: tuple[int | str, ...], keyed: frozenset[str]) -> str:
    """``conversations[3].mapping['abc'].message.author.role`` from pydantic's location."""
    out = prefix
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif previous in keyed:
            out += f"[{part!r}]"
        else:
            out += f".{part}" if out else str(part)
        previous = part
    return out


def validate(
    model: type[_Model], data: Any, where: str, keyed: frozenset[str] = frozenset()
) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = _where(where, tuple(first["loc"]), keyed)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise FormatError(f"{place}: {first['msg']}{more}") from None


# ---- Open WebUI ----------------------------------------------------------------------------
class OwuiMessage(_Model):
    id: str = Key()
    parentId: str | None = Field(default=None, max_length=MAX_KEY)  # noqa: N815 (the format's)
    childrenIds: list[str] = Field(default_factory=list)  # noqa: N815
    role: str = Field(max_length=32)
    content: str = Field(max_length=MAX_TEXT)
    timestamp: int | float | None = None


class OwuiHistory(_Model):
    messages: dict[str, OwuiMessage]
    currentId: str | None = Field(default=None, max_length=MAX_KEY)  # noqa: N815


class OwuiChatBody(_Model):
    title: str = Field(default="", max_length=10_000)
    history: OwuiHistory


class OwuiChat(_Model):
    id: str = Key()
    title: str = Field(default="", max_length=10_000)
    chat: OwuiChatBody
    created_at: int | float | None = None
    updated_at: int | float | None = None


def openwebui_threads(data: Any) -> Iterator[Thread]:
    if not isinstance(data, list):
        raise FormatError(_("the file: expected a list of chats (Open WebUI's export)"))
    for i, item in enumerate(data):
        where = f"[{i}]"
        chat = validate(OwuiChat, item, where, frozenset({"messages"}))
        nodes: list[Node] = []
        for key, message in chat.chat.history.messages.items():
            if message.id != key:
                raise FormatError(
                    f"{where}.chat.history.messages[{key!r}].id: is {message.id!r}, "
                    "not the key it is stored under"
                )
            node = Node(key=key, parent=message.parentId, role=None, at=_epoch(message.timestamp))
            if message.role in ("user", "assistant"):
                node.role = message.role  # type: ignore[assignment]
                node.text = message.content
            elif message.role == "system":
                node.skipped = SKIP_SYSTEM
            elif message.role == "tool":
                node.skipped = SKIP_TOOL
            else:
                node.skipped = SKIP_OTHER
            nodes.append(node)
        yield Thread(
            source_id=chat.id,
            title=chat.title or chat.chat.title,
            created=_epoch(chat.created_at),
            updated=_epoch(chat.updated_at),
            nodes=nodes,
            current=chat.chat.history.currentId,
            where=where,
        )


# ---- ChatGPT -------------------------------------------------------------------------------
class GptAuthor(_Model):
    role: Literal["system", "user", "assistant", "tool"]


class GptContent(_Model):
    content_type: str = Field(max_length=64)
    # Text parts are strings; images and files are objects (asset pointers).
    parts: list[str | dict[str, Any]] | None = None
    text: str | None = Field(default=None, max_length=MAX_TEXT)


class GptMessage(_Model):
    author: GptAuthor
    content: GptContent
    create_time: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class GptNode(_Model):
    id: str = Key()
    message: GptMessage | None = None
    parent: str | None = Field(default=None, max_length=MAX_KEY)
    children: list[str] = Field(default_factory=list)


class GptConversation(_Model):
    title: str | None = Field(default=None, max_length=10_000)
    create_time: float | None = None
    update_time: float | None = None
    mapping: dict[str, GptNode]
    current_node: str | None = Field(default=None, max_length=MAX_KEY)
    conversation_id: str | None = Field(default=None, max_length=MAX_KEY)
    id: str | None = Field(default=None, max_length=MAX_KEY)


_GPT_TOOLISH = {"code", "execution_output", "tether_browsing_display", "tether_quote"}
_GPT_REASONING = {"thoughts", "reasoning_recap"}


def _gpt_node(key: str, node: GptNode, where: str, counts: dict[str, int]) -> Node:
    out = Node(key=key, parent=node.parent, role=None)
    message = node.message
    if message is None:  # the tree's root: no message, nothing to count
        return out
    out.at = _epoch(message.create_time)
    role, content = message.author.role, message.content
    if message.metadata.get("is_visually_hidden_from_conversation"):
        out.skipped = SKIP_HIDDEN
    elif role == "system" or content.content_type == "user_editable_context":
        out.skipped = SKIP_SYSTEM
    elif role == "tool" or content.content_type in _GPT_TOOLISH:
        out.skipped = SKIP_TOOL
    elif content.content_type in _GPT_REASONING:
        out.skipped = SKIP_REASONING
    elif content.content_type in ("text", "multimodal_text"):
        texts = [part for part in content.parts or [] if isinstance(part, str)]
        images = len(content.parts or []) - len(texts)
        if images:
            counts[SKIP_IMAGE] = counts.get(SKIP_IMAGE, 0) + images
        text = "\n\n".join(t for t in texts if t)
        if len(text) > MAX_TEXT:
            raise FormatError(f"{where}.message.content.parts: longer than {MAX_TEXT} characters")
        if text.strip():
            out.role, out.text = role, text  # type: ignore[assignment]
        else:
            out.skipped = SKIP_IMAGE if images else SKIP_EMPTY
    else:
        out.skipped = SKIP_OTHER
    return out


def chatgpt_threads(data: Any) -> Iterator[Thread]:
    if not isinstance(data, list):
        raise FormatError(_("the file: expected a list of conversations (conversations.json)"))
    for i, item in enumerate(data):
        where = f"conversations[{i}]"
        conversation = validate(GptConversation, item, where, frozenset({"mapping"}))
        counts: dict[str, int] = {}
        nodes = []
        for key, node in conversation.mapping.items():
            if node.id != key:
                raise FormatError(
                    f"{where}.mapping[{key!r}].id: is {node.id!r}, not the key it is stored under"
                )
            nodes.append(_gpt_node(key, node, f"{where}.mapping[{key!r}]", counts))
        yield Thread(
            source_id=conversation.conversation_id or conversation.id or "",
            title=conversation.title or "",
            created=_epoch(conversation.create_time),
            updated=_epoch(conversation.update_time),
            nodes=nodes,
            current=conversation.current_node,
            where=where,
            skipped_parts=counts,
        )


# ---- LibreChat -----------------------------------------------------------------------------
NO_PARENT = "00000000-0000-0000-0000-000000000000"


class LcPart(_Model):
    type: str = Field(max_length=64)
    # A text part's text is a string, or {"value": ...} in older versions.
    text: str | dict[str, Any] | None = None


class LcMessage(_Model):
    messageId: str = Key()  # noqa: N815 (the format's names)
    parentMessageId: str | None = Field(default=None, max_length=MAX_KEY)  # noqa: N815
    isCreatedByUser: bool | None = None  # noqa: N815
    sender: str | None = Field(default=None, max_length=200)
    text: str | None = Field(default=None, max_length=MAX_TEXT)
    content: list[LcPart] | None = Field(default=None, max_length=1000)
    createdAt: str | None = Field(default=None, max_length=64)  # noqa: N815
    # The tree form: the answers to this message (checked one by one as they are reached).
    children: list[Any] | None = None


class LcConversation(_Model):
    conversationId: str = Key()  # noqa: N815
    title: str | None = Field(default=None, max_length=10_000)
    endpoint: str | None = Field(default=None, max_length=200)
    recursive: bool = False
    messages: list[Any] | None = None
    messagesTree: list[Any] | None = None  # noqa: N815
    createdAt: str | None = Field(default=None, max_length=64)  # noqa: N815
    updatedAt: str | None = Field(default=None, max_length=64)  # noqa: N815


def _lc_text(message: LcMessage, counts: dict[str, int]) -> tuple[str, str]:
    """The message's text, and why it was skipped when it has none."""
    if message.text:
        return message.text, ""
    texts, skipped = [], ""
    for part in message.content or []:
        if part.type == "text":
            value = part.text.get("value") if isinstance(part.text, dict) else part.text
            if isinstance(value, str) and value:
                texts.append(value)
            continue
        reason = {
            "tool_call": SKIP_TOOL,
            "think": SKIP_REASONING,
            "image_file": SKIP_IMAGE,
            "image_url": SKIP_IMAGE,
        }.get(part.type, SKIP_OTHER)
        counts[reason] = counts.get(reason, 0) + 1
        skipped = skipped or reason
    text = "\n\n".join(texts)
    if len(text) > MAX_TEXT:
        raise FormatError(f"text: longer than {MAX_TEXT} characters")
    return text, ("" if text.strip() else (skipped or SKIP_EMPTY))


def _lc_messages(items: list[Any], where: str, tree: bool) -> Iterator[tuple[LcMessage, str]]:
    """Each message with its place; the tree form walked without recursion (no stack to
    exhaust on a long conversation), a child's parent being the message holding it."""
    stack: list[tuple[Any, str, str | None]] = [
        (item, f"{where}[{i}]", None) for i, item in reversed(list(enumerate(items)))
    ]
    while stack:
        item, place, parent = stack.pop()
        message = validate(LcMessage, item, place)
        if tree:
            message.parentMessageId = parent or NO_PARENT
            for j, child in reversed(list(enumerate(message.children or []))):
                stack.append((child, f"{place}.children[{j}]", message.messageId))
        yield message, place


def librechat_threads(data: Any) -> Iterator[Thread]:
    if not isinstance(data, dict):
        raise FormatError(_("the file: expected one conversation (LibreChat's export)"))
    conversation = validate(LcConversation, data, "")
    items, name = conversation.messagesTree, "messagesTree"
    if items is None:
        items, name = conversation.messages, "messages"
    if items is None:
        raise FormatError("messages: Field required")
    tree = conversation.recursive or name == "messagesTree"
    counts: dict[str, int] = {}
    nodes = []
    for message, place in _lc_messages(items, name, tree):
        try:
            text, skipped = _lc_text(message, counts)
        except FormatError as exc:
            raise FormatError(f"{place}.{exc}") from None
        user = message.isCreatedByUser
        if user is None:
            user = (message.sender or "").lower() == "user"
        parent = message.parentMessageId
        node = Node(
            key=message.messageId,
            parent=None if parent in (None, "", NO_PARENT) else parent,
            role=None if skipped else ("user" if user else "assistant"),
            text=text,
            at=_iso(message.createdAt),
            skipped=skipped,
        )
        nodes.append(node)
    yield Thread(
        source_id=conversation.conversationId,
        title=conversation.title or "",
        created=_iso(conversation.createdAt) or (nodes[0].at if nodes else None),
        updated=_iso(conversation.updatedAt),
        nodes=nodes,
        # LibreChat's export has no "shown" pointer: the branch with the latest message is
        # shown (the latest started turn is the head).
        current=None,
        where="",
        skipped_parts=counts,
    )


READERS = {
    "openwebui": openwebui_threads,
    "chatgpt": chatgpt_threads,
    "librechat": librechat_threads,
}


def detect(data: Any) -> str | None:
    """The format of parsed JSON, by its shape; None when it is none of them."""
    if isinstance(data, dict):
        if data.get("format") == "control-center.conversation":
            return "controlcenter"
        if "conversationId" in data and ("messages" in data or "messagesTree" in data):
            return "librechat"
        return None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        first = data[0]
        if "mapping" in first:
            return "chatgpt"
        if isinstance(first.get("chat"), dict):
            return "openwebui"
    return None
