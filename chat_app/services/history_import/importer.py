"""A person's history from Open WebUI, ChatGPT or LibreChat into their own conversations.

Each export's messages form a tree (a regenerated answer or an edited message is a sibling).
It becomes the product's turn tree (``chat_app.turn_tree``): a turn is a message of the
person and the answer that followed; two answers to one message are two sibling turns
with the same message, as Regenerate makes them, and an edited message is a sibling turn,
as Edit makes it. The branch the export showed last is the one shown. Nothing is run:
the turns are finished records (``Turn.Source.IMPORT``), no model or tool is called,
nothing is counted in usage or quotas. Skipped content (tool calls and their output,
reasoning, images, system prompts) is counted by reason in the summary and the audit record.

The whole file is checked before anything is written: a file that fails is refused with
the place of the first problem, and nothing of it is imported.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from chat_app.models import Conversation, ImportSource, Message, Turn
from chat_app.services import transfer
from chat_app.services.history_import import formats
from chat_app.services.history_import.formats import FormatError, Node, Thread
from chat_app.services.titles import DEFAULT_TITLE
from infra.safe_json import json_loads_safe
from tools_app.services.audit import audit_history_import

MAX_IMPORT_BYTES = 64 * 1024 * 1024
MAX_CONVERSATIONS = 5_000
MAX_MESSAGES = 100_000  # in the whole file
MAX_MESSAGES_PER_CONVERSATION = 10_000
# A LibreChat tree nests two levels per message; deeper JSON is refused before it is walked.
MAX_JSON_DEPTH = 400
FORMATS = ("auto", "controlcenter", "openwebui", "chatgpt", "librechat")
SKIP_ALREADY = "already imported"
SKIP_NO_TEXT = "no text messages"


class HistoryImportError(ValueError):
    """The file was refused; nothing of it was imported. The message says why and where."""


@dataclass
class ImportSummary:
    format: str
    conversations: list[Conversation] = field(default_factory=list)
    messages: int = 0
    skipped_conversations: Counter[str] = field(default_factory=Counter)
    skipped_messages: Counter[str] = field(default_factory=Counter)

    def counts(self) -> dict[str, Any]:
        return {
            "conversations": len(self.conversations),
            "messages": self.messages,
            "skipped_conversations": dict(self.skipped_conversations),
            "skipped_messages": dict(self.skipped_messages),
        }


@dataclass
class _TurnPlan:
    nodes: list[Node]
    parent: int | None  # index into the plan list


def _kept_tree(thread: Thread) -> tuple[list[Node], dict[str | None, list[Node]], str | None]:
    """The kept (text) nodes, their children (skipped nodes' children moved up to the nearest
    kept ancestor), and the kept node the export showed last. Refuses a parent that is not
    in the conversation and parent links that go round in a circle."""
    by_key = {node.key: node for node in thread.nodes}
    for node in thread.nodes:
        if node.parent is not None and node.parent not in by_key:
            text = _("%(where)s message %(key)s: its parent %(parent)s is not in the conversation")
            raise FormatError(
                (
                    text
                    % {"where": thread.where, "key": repr(node.key), "parent": repr(node.parent)}
                ).strip()
            )
    # Each node's nearest kept ancestor: walk up to a node already known (or the top), then
    # resolve the walk back down. A walk that meets itself is a cycle.
    kept_parent: dict[str, str | None] = {}
    for node in thread.nodes:
        chain: list[str] = []
        seen: set[str] = set()
        cursor: str | None = node.key
        while cursor is not None and cursor not in kept_parent:
            if cursor in seen:
                text = _("%(where)s message %(key)s: the parent links go round in a circle")
                raise FormatError((text % {"where": thread.where, "key": repr(cursor)}).strip())
            seen.add(cursor)
            chain.append(cursor)
            cursor = by_key[cursor].parent
        for key in reversed(chain):
            parent = by_key[key].parent
            if parent is None:
                kept_parent[key] = None
            elif by_key[parent].role is not None:
                kept_parent[key] = parent
            else:
                kept_parent[key] = kept_parent[parent]
    kept = [node for node in thread.nodes if node.role is not None]
    children: dict[str | None, list[Node]] = {}
    for node in kept:
        children.setdefault(kept_parent[node.key], []).append(node)
    current = thread.current if thread.current in by_key else None
    if current is not None and by_key[current].role is None:
        current = kept_parent.get(current)
    return kept, children, current


def _plan_turns(children: dict[str | None, list[Node]]) -> list[_TurnPlan]:
    """Turns from the message tree, without recursion (a conversation may be long): a turn
    ends where a person's message follows an answer; two answers (or two versions of a
    message) where one was make sibling turns that share what came before them in the turn."""
    plans: list[_TurnPlan] = []
    stack: list[tuple[Node, list[Node], int | None]] = [
        (root, [], None) for root in reversed(children.get(None, []))
    ]
    while stack:
        node, prefix, parent = stack.pop()
        nodes = [*prefix, node]
        answered = any(n.role == "assistant" for n in nodes)
        kids = children.get(node.key, [])
        next_turns = [k for k in kids if answered and k.role == "user"]
        continuing = [k for k in kids if not (answered and k.role == "user")]
        if next_turns or not continuing:
            plans.append(_TurnPlan(nodes=nodes, parent=parent))
            index = len(plans) - 1
            stack.extend((kid, [], index) for kid in reversed(next_turns))
        stack.extend((kid, nodes, parent) for kid in reversed(continuing))
    return plans


def _clean(text: str) -> str:
    """Neither database stores NUL; PostgreSQL refuses lone surrogates (JSON allows both)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _title(thread: Thread) -> str:
    return " ".join(_clean(thread.title).split())[:200] or DEFAULT_TITLE


def _write(
    owner: Any, fmt: str, thread: Thread, plans: list[_TurnPlan], current: str | None
) -> Conversation:
    """One conversation with its turns and messages; the original times kept."""
    now = timezone.now()
    times = [n.at for plan in plans for n in plan.nodes if n.at is not None]
    created = thread.created or (min(times) if times else now)
    updated = thread.updated or (max(times) if times else created)
    conversation = Conversation.objects.create(
        owner=owner,
        title=_title(thread),
        imported_from=fmt,
        imported_id=_clean(thread.source_id)[:200],
    )
    turns = Turn.objects.bulk_create(
        [
            Turn(
                conversation=conversation,
                user=owner,
                source=Turn.Source.IMPORT,
                status=Turn.Status.SUCCEEDED,
                phase=Turn.Phase.DONE,
                finished_at=now,
            )
            for _plan in plans
        ],
        batch_size=500,
    )
    messages: list[Message] = []
    message_times: list[datetime] = []
    clock = created
    shown: Turn | None = None
    for plan, turn in zip(plans, turns, strict=True):
        turn.parent = None if plan.parent is None else turns[plan.parent]
        # A turn starts when its last message was written (siblings then keep the export's
        # order); a message without a time takes the one before it, a moment later.
        for node in plan.nodes:
            clock = node.at or clock + timedelta(milliseconds=1)
            message_times.append(clock)
            messages.append(
                Message(
                    conversation=conversation,
                    turn=turn,
                    role=node.role or Message.Role.ASSISTANT,
                    content=_clean(node.text),
                )
            )
        turn.started_at = clock
        turn.finished_at = clock
        if current is not None and shown is None and plan.nodes[-1].key == current:
            shown = turn
    if current is not None and shown is None:
        shown = next(
            (
                t
                for p, t in zip(plans, turns, strict=True)
                if any(n.key == current for n in p.nodes)
            ),
            None,
        )
    if shown is not None:
        shown.chosen_at = now
    Turn.objects.bulk_update(
        turns, ["parent", "started_at", "finished_at", "chosen_at"], batch_size=500
    )
    saved = Message.objects.bulk_create(messages, batch_size=500)
    for message, when in zip(saved, message_times, strict=True):
        message.created_at = when
    Message.objects.bulk_update(saved, ["created_at"], batch_size=500)
    Conversation.objects.filter(pk=conversation.pk).update(created_at=created, updated_at=updated)
    conversation.created_at, conversation.updated_at = created, updated
    return conversation


def parse(raw: bytes | str, fmt: str = "auto") -> tuple[str, list[Thread]]:
    """The format and every conversation of the file, all checked; HistoryImportError when
    any of it is not valid."""
    if fmt not in FORMATS:
        raise HistoryImportError(
            _("unknown format %(fmt)s (one of: %(formats)s)")
            % {"fmt": repr(fmt), "formats": ", ".join(FORMATS)}
        )
    if len(raw) > MAX_IMPORT_BYTES:
        raise HistoryImportError(
            _("the file is larger than %(mb)s MB") % {"mb": MAX_IMPORT_BYTES // (1024 * 1024)}
        )
    try:
        data = json_loads_safe(raw, max_depth=MAX_JSON_DEPTH)
    except ValueError as exc:
        raise HistoryImportError(_("not valid JSON: %(str)s") % {"str": str(exc)[:200]}) from None
    found = formats.detect(data)
    if fmt == "auto":
        if found is None:
            raise HistoryImportError(
                _(
                    "not a conversation export of Control Center, Open WebUI, ChatGPT or "
                    "LibreChat (choose the format to see what is wrong with it)"
                )
            )
        fmt = found
    if fmt == "controlcenter":  # one conversation, read by chat_app.services.transfer
        return fmt, []
    threads: list[Thread] = []
    total = 0
    try:
        for thread in formats.READERS[fmt](data):
            threads.append(thread)
            if len(threads) > MAX_CONVERSATIONS:
                raise HistoryImportError(
                    _("more than %(n)s conversations") % {"n": MAX_CONVERSATIONS}
                )
            if len(thread.nodes) > MAX_MESSAGES_PER_CONVERSATION:
                raise HistoryImportError(
                    _("%(where)s: more than %(n)s messages")
                    % {
                        "where": thread.where or _("the conversation"),
                        "n": MAX_MESSAGES_PER_CONVERSATION,
                    }
                )
            total += len(thread.nodes)
            if total > MAX_MESSAGES:
                raise HistoryImportError(_("more than %(n)s messages") % {"n": MAX_MESSAGES})
            # Parents and cycles are checked here, before anything is written.
            thread.tree = _kept_tree(thread)
    except FormatError as exc:
        raise HistoryImportError(str(exc)) from None
    return fmt, threads


def _audit(summary: ImportSummary, *, owner: Any, raw: bytes | str, actor: Any, via: str) -> None:
    data = raw if isinstance(raw, bytes) else raw.encode()
    audit_history_import(
        actor=actor,
        owner=owner,
        via=via,
        fmt=summary.format,
        counts={**summary.counts(), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)},
    )


def _control_center(*, owner: Any, raw: bytes | str, actor: Any, via: str) -> ImportSummary:
    """A Control Center export (one conversation, its tool calls as records)."""
    summary = ImportSummary(format="controlcenter")
    with transaction.atomic():
        try:
            conversation = transfer.import_conversation(owner=owner, raw=raw)
        except transfer.ImportError_ as exc:
            raise HistoryImportError(str(exc)) from None
        conversation.imported_from = ImportSource.CONTROL_CENTER
        conversation.save(update_fields=["imported_from"])
        summary.conversations.append(conversation)
        summary.messages = conversation.messages.count()
        _audit(summary, owner=owner, raw=raw, actor=actor, via=via)
    return summary


def history_import(
    *, owner: Any, raw: bytes | str, fmt: str = "auto", actor: Any, via: str
) -> ImportSummary:
    """Import every conversation of the file into ``owner``'s account and audit it; ``actor``
    is who asked (None: an operator's command). The caller has checked that ``actor`` may
    import into ``owner`` (``infra.access.history_import_into``)."""
    fmt, threads = parse(raw, fmt)
    if fmt == "controlcenter":
        return _control_center(owner=owner, raw=raw, actor=actor, via=via)
    summary = ImportSummary(format=fmt)
    known = set(
        Conversation.objects.filter(owner=owner, imported_from=fmt).values_list(
            "imported_id", flat=True
        )
    )
    with transaction.atomic():
        for thread in threads:
            kept, children, current = thread.tree
            for node in thread.nodes:
                if node.role is None and node.skipped:
                    summary.skipped_messages[node.skipped or formats.SKIP_OTHER] += 1
            for reason, count in thread.skipped_parts.items():
                summary.skipped_messages[reason] += count
            if thread.source_id and thread.source_id in known:
                summary.skipped_conversations[SKIP_ALREADY] += 1
                continue
            if not kept:
                summary.skipped_conversations[SKIP_NO_TEXT] += 1
                continue
            plans = _plan_turns(children)
            conversation = _write(owner, fmt, thread, plans, current)
            known.add(thread.source_id)
            summary.conversations.append(conversation)
            # The export's messages (a message with two answers is in two turns here).
            summary.messages += len(kept)
        _audit(summary, owner=owner, raw=raw, actor=actor, via=via)
    return summary
