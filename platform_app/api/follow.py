"""Following one turn from outside the browser: the events its conversation's group carries
on the channel layer (``chat_app.events``, ``tools_app.events``), as the chat page gets them,
turned into what a program streams — the reply's text as it is written, the tool calls as
they change, the end — with keep-alive ticks while nothing happens (a call waiting for an
approver, a slow model).

The listener is subscribed before the turn starts (``turn_listen``), so nothing the turn
publishes is missed; an event lost on the way (a full channel, Redis restarting) is made up
for by reading the turn's row after a quiet spell, and the final text is read from the
database when the turn ends (``TextStitcher.missing``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from infra.events import GroupListener, conversation_group
from infra.websocket import db

# Without any event for this long, the turn's row is read in case its end was lost.
FALLBACK_POLL_SECONDS = 2.0


@dataclass(frozen=True)
class TextPiece:
    """Text of the reply message ``message_id`` starting at ``offset`` (a model round's)."""

    message_id: int
    offset: int
    text: str


@dataclass(frozen=True)
class CallChanged:
    """A tool call of the turn changed status (its card was published)."""

    call_id: int
    status: str


@dataclass(frozen=True)
class TurnEnded:
    turn_id: int
    status: str


@dataclass(frozen=True)
class KeepAlive:
    """Nothing happened for the keep-alive interval."""


TurnEvent = TextPiece | CallChanged | TurnEnded | KeepAlive


def turn_listen(conversation_id: int) -> GroupListener:
    """A listener on the conversation's events; enter it before starting the turn."""
    return GroupListener(conversation_group(conversation_id))


def _turn_status(turn_id: int) -> str:
    from chat_app.models import Turn

    row = Turn.objects.filter(pk=turn_id).values_list("status", flat=True).first()
    return row or Turn.Status.FAILED  # gone (its conversation deleted): it ended


async def turn_events(
    events: GroupListener, turn_id: int, *, keepalive: float
) -> AsyncIterator[TurnEvent]:
    """The turn's events until it ends (the last one is ``TurnEnded``)."""
    from chat_app.models import Turn

    quiet_since = time.monotonic()
    checked_at = time.monotonic()
    while True:
        wait = min(keepalive, FALLBACK_POLL_SECONDS)
        payload = await events.receive(wait)
        now = time.monotonic()
        if payload is None:
            if now - checked_at >= FALLBACK_POLL_SECONDS:
                checked_at = now
                status = await db(_turn_status)(turn_id)
                if status != Turn.Status.RUNNING:
                    yield TurnEnded(turn_id, status)
                    return
            if now - quiet_since >= keepalive:
                quiet_since = now
                yield KeepAlive()
            continue
        event = _event_of(payload, turn_id)
        if event is None:
            continue
        quiet_since = checked_at = now
        yield event
        if isinstance(event, TurnEnded):
            return


def _event_of(payload: dict[str, object], turn_id: int) -> TurnEvent | None:
    kind = payload.get("type")
    try:
        if kind == "token":
            # Only the running round streams, and one turn of a conversation runs: this one's.
            return TextPiece(
                int(payload["message_id"]),  # type: ignore[call-overload]
                int(payload["offset"]),  # type: ignore[call-overload]
                str(payload.get("text") or ""),
            )
        if kind == "toolcall" and payload.get("turn_id") == turn_id:
            return CallChanged(int(payload["id"]), str(payload.get("status") or ""))  # type: ignore[call-overload]
        if kind == "turn" and payload.get("id") == turn_id and not payload.get("running"):
            return TurnEnded(turn_id, str(payload.get("status") or ""))
    except (KeyError, TypeError, ValueError):
        return None
    return None


@dataclass
class TextStitcher:
    """The reply text as it streams: pieces arrive with their offsets, so a repeated piece is
    skipped and one that arrives early waits for the text before it. A round that restarts
    (a retry after a transient failure) starts its message at offset 0 again: what was sent
    cannot be taken back, so the new text follows it after a blank line."""

    sent: dict[int, str] = field(default_factory=dict)  # message id → text sent of it
    early: dict[int, dict[int, str]] = field(default_factory=dict)
    restarted: set[int] = field(default_factory=set)

    def add(self, piece: TextPiece) -> str:
        """The new text to send for ``piece`` ("" when nothing is new yet)."""
        done = self.sent.setdefault(piece.message_id, "")
        if piece.offset == 0 and done and not done.startswith(piece.text[: len(done)]):
            self.restarted.add(piece.message_id)
            self.sent[piece.message_id] = ""
            self.early.pop(piece.message_id, None)
            return "\n\n" + self._take(piece)
        return self._take(piece)

    def _take(self, piece: TextPiece) -> str:
        out = ""
        waiting = self.early.setdefault(piece.message_id, {})
        waiting[piece.offset] = piece.text
        while True:
            done = self.sent[piece.message_id]
            here = len(done)
            # A piece that starts at or before where we are and reaches past it.
            usable = [(o, t) for o, t in waiting.items() if o <= here < o + len(t)]
            for offset in [o for o, t in waiting.items() if o + len(t) <= here]:
                del waiting[offset]  # wholly sent already
            if not usable:
                return out
            offset, text = usable[0]
            del waiting[offset]
            new = text[here - offset :]
            self.sent[piece.message_id] = done + new
            out += new

    def missing(self, message_id: int, final: str) -> str:
        """What of the message's final text was not sent (lost or held pieces)."""
        done = self.sent.get(message_id, "")
        if final.startswith(done):
            self.sent[message_id] = final
            return final[len(done) :]
        return ""  # restarted differently than it ended: what was sent stands
