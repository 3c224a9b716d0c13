"""Turns that lost their runner or their message: end them clearly, or queue them again.

Run by every process's maintenance thread (web, agent runner, workers): each step is a
conditional UPDATE, so several processes doing it at once is harmless, and the web process
notices lost work even when no worker or runner is left.

- ``streaming`` on a runner that has not reported itself alive for ``AGENT_HEARTBEAT_TIMEOUT``
  (``runner_beats``): the runner died mid-reply (killed, OOM, machine gone, loop wedged). The
  partial reply is kept, marked as an error, and the turn fails with a notice saying so; the
  next message works as usual.
- ``model`` (queued) for that long: the round's message was lost (Redis restarted), every
  runner is busy, or none is running. It is queued again; when no runner is alive it fails
  after two more waits, saying no runner took it.
- ``tools`` with every call finished, the last of them that long ago: the process finishing
  the last call died before moving the turn on. It moves on now. (Not sooner: the finishing
  process moves it on a moment after its call ends, and a pass that did it first would run
  the next round in whichever process the pass ran in — with two processes on one SQLite
  file, that process's runner and in-memory channel layer, which the page never hears.)
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

from chat_app.events import message_publish
from chat_app.models import Message, Turn
from chat_app.services.runner_beats import runners_alive, runners_forget_dead
from chat_app.services.turns import (
    conversation_language,
    round_send,
    turn_advance,
    turn_finish,
)
from tools_app.models import ToolCall

logger = logging.getLogger(__name__)

MAX_REQUEUES = 2

RUNNER_LOST = gettext_noop(
    "⚠ The agent runner writing this reply stopped responding (runner lost%(who)s), so the turn "
    "was ended. Nothing is running any more; send your message again to retry."
)
NO_RUNNER = gettext_noop(
    "⚠ No agent runner took this message within %(seconds)s s, so the turn was ended. "
    "Is the agent runner running (`manage.py agent_runner`, or `make run`)? "
    "Send your message again once it is."
)


def turns_reap_lost() -> int:
    """One pass; returns how many turns it ended or queued again."""
    timeout = settings.AGENT_HEARTBEAT_TIMEOUT
    now = timezone.now()
    limit = now - timedelta(seconds=timeout)
    alive = {runner.name for runner in runners_alive()}
    running = Turn.objects.filter(status=Turn.Status.RUNNING).select_related("conversation")
    acted = 0
    # heartbeat_at is when the runner claimed the turn: a turn claimed a moment ago by a
    # runner that has not reported itself yet is left alone.
    streaming = running.filter(phase=Turn.Phase.STREAMING, heartbeat_at__lt=limit)
    for turn in streaming.exclude(runner__in=alive):
        if _end_streaming(turn):
            acted += 1
    for turn in running.filter(phase=Turn.Phase.MODEL, heartbeat_at__lt=limit):
        if not alive and turn.requeued >= MAX_REQUEUES:
            with translation.override(conversation_language(turn.conversation)):
                notice = gettext(NO_RUNNER) % {"seconds": timeout * (MAX_REQUEUES + 1)}
                if turn_finish(
                    turn,
                    status=Turn.Status.FAILED,
                    error="no agent runner took the turn",
                    notice=notice,
                ):
                    acted += 1
        # Queue it again: its message may have been lost (a Redis restart keeps nothing). A
        # busy runner that still holds the first copy just finds the turn claimed.
        elif Turn.objects.filter(
            pk=turn.pk, phase=Turn.Phase.MODEL, heartbeat_at=turn.heartbeat_at
        ).update(requeued=F("requeued") + 1, heartbeat_at=now):
            logger.warning("turn %s waited %d s for a runner; queueing it again", turn.pk, timeout)
            round_send(turn.pk)
            acted += 1
    stuck = (
        running.filter(phase=Turn.Phase.TOOLS)
        .exclude(tool_calls__status__in=_UNFINISHED)
        .exclude(tool_calls__finished_at__gte=limit)
        .values_list("pk", flat=True)
    )
    for turn_id in list(stuck):
        turn_advance(turn_id)
    runners_forget_dead()
    return acted


_UNFINISHED = [s for s in ToolCall.Status.values if s not in ToolCall.TERMINAL]


def _end_streaming(turn: Turn) -> bool:
    with translation.override(conversation_language(turn.conversation)):
        return _end_streaming_in_language(turn)


def _end_streaming_in_language(turn: Turn) -> bool:
    # The partial reply first (what was stored of it stays), then the turn: the page sees the
    # reply marked before Send comes back. A runner that was only slow, not dead, finds both
    # closed when it finishes and leaves them alone (see loop.round_complete).
    streaming = Message.objects.filter(turn=turn, state=Message.State.STREAMING)
    ids = list(streaming.values_list("pk", flat=True))
    streaming.update(state=Message.State.ERROR, note="", version=F("version") + 1)
    for message in Message.objects.filter(pk__in=ids):
        message_publish(message)
    if not turn_finish(
        turn,
        status=Turn.Status.FAILED,
        # The runner's name says where it ran ("runner@host:pid:…"): "worker lost" does too.
        error=f"agent runner lost ({turn.runner})" if turn.runner else "agent runner lost",
        notice=gettext(RUNNER_LOST) % {"who": f": {turn.runner}" if turn.runner else ""},
    ):
        return False
    logger.warning("turn %s: its agent runner %s stopped responding", turn.pk, turn.runner)
    return True
